package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/csvsafe"
)

// resultQuerier is what the results explorer and the export read: the
// run store, or a fake in tests.
type resultQuerier interface {
	Run(ctx context.Context, id string) (runs.Info, error)
	QueryResults(ctx context.Context, runID string, q runs.ResultQuery) (runs.ResultPage, error)
	EachResult(ctx context.Context, runID string, q runs.ResultQuery, fn func(runs.Result) error) error
}

var _ resultQuerier = (*runs.Store)(nil)

type resultsHandler struct {
	problems
	runs resultQuerier
}

// optionalInt is an integer query parameter that may be absent, which a
// plain int cannot tell from 0.
type optionalInt struct {
	Value int
	Set   bool
}

// Receiver is where huma parses the parameter.
func (o *optionalInt) Receiver() reflect.Value { return reflect.ValueOf(o).Elem().Field(0) }

// OnParamSet records whether the parameter was given.
func (o *optionalInt) OnParamSet(isSet bool, _ any) { o.Set = isSet }

// Schema documents the parameter as an integer (a struct's schema would
// be an object).
func (optionalInt) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeInteger, Format: "int64"}
}

func (o optionalInt) ptr() *int {
	if !o.Set {
		return nil
	}
	return &o.Value
}

// filterQuery is the store query of the filter parameters that
// list-run-results and export-run-results share. (huma reads the
// parameters of an input's own fields, not of an embedded struct's: each
// input lists them.)
func filterQuery(domain string, level optionalInt, status, q, sort string) runs.ResultQuery {
	return runs.ResultQuery{Domain: domain, Level: level.ptr(), Status: status, Search: q, Sort: sort}
}

type resultsInput struct {
	RunID  string      `path:"run_id" doc:"Run id."`
	Domain string      `query:"domain" doc:"Only results of this domain."`
	Level  optionalInt `query:"level" minimum:"0" doc:"Only results of this level."`
	Status string      `query:"status" enum:"passed,failed,error" doc:"Only results with this status."`
	Q      string      `query:"q" maxLength:"1000" doc:"Only results whose prompt, response or test id contains this text. Case is ignored for the ASCII letters A-Z only (é and É differ); every other character, % _ * and quotes included, is matched as it is; a response's text after a NUL character is not searched. UTF-8 without NUL. 3 characters or more are looked up in an index, which holds results a moment after they are stored (see search_index: those it does not hold yet are read one by one); 1 or 2 characters read every result the other filters keep (slower on a large run), with the same matches."`
	Sort   string      `query:"sort" default:"id" enum:"id,-id,score,-score,duration_ms,-duration_ms" doc:"The order: id (the order the results were stored, as they finished), score or duration_ms, ascending; with - in front, descending. Ties are in storage order."`
	Limit  int         `query:"limit" default:"100" minimum:"1" maximum:"1000" doc:"Results per page."`
	Cursor string      `query:"cursor" doc:"Where the page starts: next_cursor of the previous page, with the same filters and sort. Absent: the first page."`
}

// apiResultPage is the answer of list-run-results.
type apiResultPage struct {
	Results    []apiTestResult `json:"results" doc:"At most limit results, in the order asked."`
	Total      int             `json:"total" doc:"Results the filters select, on every page."`
	NextCursor *string         `json:"next_cursor" nullable:"true" doc:"Pass it as cursor for the next page; null on the last page."`
	// SearchIndex, with q only, says how far the search index has caught
	// up with the run's results.
	SearchIndex *apiSearchIndex `json:"search_index,omitempty"`
}

// apiSearchIndex says how far the search index has caught up with a run.
type apiSearchIndex struct {
	Pending int `json:"pending" minimum:"0" doc:"The run's results not in the search index yet (it is kept up a moment after results are stored). The search reads those one by one (all of the run's results, when the index holds none of them yet): it finds the same ones, slower. 0 once the index holds them all."`
}

type resultsOutput struct {
	Body apiResultPage
}

type exportInput struct {
	RunID  string      `path:"run_id" doc:"Run id."`
	Format string      `query:"format" default:"jsonl" enum:"csv,jsonl" doc:"jsonl: one result per line, as list-run-results gives them. csv: one row per result with a header row."`
	Raw    bool        `query:"raw" doc:"csv only: write every cell exactly as stored, for programs. By default a cell that starts with =, +, -, @, a tab or a carriage return gets a single quote in front, so that a spreadsheet shows it as text instead of running it as a formula."`
	Domain string      `query:"domain" doc:"Only results of this domain."`
	Level  optionalInt `query:"level" minimum:"0" doc:"Only results of this level."`
	Status string      `query:"status" enum:"passed,failed,error" doc:"Only results with this status."`
	Q      string      `query:"q" maxLength:"1000" doc:"Only results whose prompt, response or test id contains this text. Case is ignored for the ASCII letters A-Z only (é and É differ); every other character, % _ * and quotes included, is matched as it is; a response's text after a NUL character is not searched. UTF-8 without NUL. 3 characters or more are looked up in an index, which holds results a moment after they are stored (see search_index: those it does not hold yet are read one by one); 1 or 2 characters read every result the other filters keep (slower on a large run), with the same matches."`
	Sort   string      `query:"sort" default:"id" enum:"id,-id,score,-score,duration_ms,-duration_ms" doc:"The order: id (the order the results were stored, as they finished), score or duration_ms, ascending; with - in front, descending. Ties are in storage order."`
}

// csvHeader names the columns of the CSV export.
var csvHeader = []string{"run_id", "test_id", "repeat", "domain", "level", "name", "status", "score", "duration_ms",
	"prompt", "response", "response_base64", "expected_answer", "expected_type", "extracted_answer", "error",
	"prompt_tokens", "completion_tokens", "created_at", "cached_tokens", "reasoning_tokens", "cost_usd", "judge_cost_usd",
	"ttft_ms", "output_tokens_per_s"}

// registerResults registers the results explorer's operations.
func registerResults(api huma.API, store resultQuerier, log *slog.Logger) {
	h := &resultsHandler{problems{log}, store}
	tags := []string{tagResults}
	register(api, huma.Operation{
		OperationID: "list-run-results", Method: http.MethodGet, Path: "/api/run/{run_id}/results",
		Summary: "Search, filter, sort and page a run's results", Tags: tags,
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
		Description: "One page of the run's results that the filters select, in the order asked, with their total. " +
			"Follow next_cursor for the next page; a cursor belongs to its sort (another sort's cursor is a 422). " +
			"Works on a running run: later pages and totals include what finished since. " +
			"422 names the parameter at fault (query.status, query.sort, query.limit, query.level, query.cursor, query.q); 404 for an unknown run.",
	}, h.list)
	register(api, huma.Operation{
		OperationID: "export-run-results", Method: http.MethodGet, Path: "/api/run/{run_id}/export",
		Summary: "Download a run's results as CSV or JSON Lines", Tags: tags,
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
		Description: "Every result of the run the filters select (all of them without filters), streamed as a download " +
			"named <run_id>.csv or <run_id>.jsonl. JSON Lines carries one result per line in the shape list-run-results gives " +
			"(response_base64 holds a response's exact bytes when they are not UTF-8). CSV has a header row; text is UTF-8, " +
			"a response that is not valid UTF-8 has its invalid bytes replaced by U+FFFD in response and its exact bytes in response_base64 " +
			"(empty otherwise). For spreadsheets, a CSV cell that starts with =, +, -, @, a tab or a carriage return is written with a " +
			"single quote in front (=1+2 becomes '=1+2), so that it is shown as text and never run as a formula; raw=true writes every cell " +
			"exactly as stored, for programs. JSON Lines is always exact. 404 for an unknown run.",
		Responses: map[string]*huma.Response{"200": {
			Description: "The results, as a download.",
			Headers: map[string]*huma.Param{"Content-Disposition": {
				Description: "attachment; filename=\"<run_id>.csv\" (or .jsonl)", Schema: &huma.Schema{Type: huma.TypeString}}},
			Content: map[string]*huma.MediaType{
				"text/csv": {Schema: &huma.Schema{Type: huma.TypeString,
					Description: "RFC 4180 CSV, UTF-8, header row first; cells that a spreadsheet would read as a formula start with ' unless raw=true."}},
				"application/x-ndjson": {Schema: &huma.Schema{Ref: schemaPrefix + "TestResult"}}, // each line
			},
		}},
	}, h.export)
}

func (h *resultsHandler) list(ctx context.Context, in *resultsInput) (*resultsOutput, error) {
	q := filterQuery(in.Domain, in.Level, in.Status, in.Q, in.Sort)
	q.Limit, q.Cursor = in.Limit, in.Cursor
	page, err := h.runs.QueryResults(ctx, in.RunID, q)
	if err != nil {
		return nil, h.queryProblem(ctx, err)
	}
	out := &resultsOutput{Body: apiResultPage{Results: toAPIResults(page.Results), Total: page.Total}}
	if page.NextCursor != "" {
		out.Body.NextCursor = &page.NextCursor
	}
	if page.SearchIndex != nil {
		out.Body.SearchIndex = &apiSearchIndex{Pending: page.SearchIndex.Pending}
	}
	return out, nil
}

func (h *resultsHandler) export(ctx context.Context, in *exportInput) (*huma.StreamResponse, error) {
	q := filterQuery(in.Domain, in.Level, in.Status, in.Q, in.Sort)
	if err := q.Check(); err != nil {
		return nil, h.queryProblem(ctx, err)
	}
	// Errors are answered before the first byte: afterwards the status
	// is sent.
	if _, err := h.runs.Run(ctx, in.RunID); err != nil {
		return nil, h.problem(ctx, err)
	}
	return &huma.StreamResponse{Body: func(hc huma.Context) {
		ctype := "application/x-ndjson"
		if in.Format == "csv" {
			ctype = "text/csv; charset=utf-8"
		}
		hc.SetHeader("Content-Type", ctype)
		hc.SetHeader("Content-Disposition", `attachment; filename="`+exportName(in.RunID, in.Format)+`"`)
		hc.SetStatus(http.StatusOK)
		w := bufio.NewWriterSize(hc.BodyWriter(), 64<<10)
		var write func(runs.Result) error
		var cw *csvsafe.Writer
		if in.Format == "csv" {
			cw = csvsafe.NewWriter(w, in.Raw)
			row := make([]string, len(csvHeader))
			write = func(r runs.Result) error {
				csvRow(row, r)
				return cw.Write(row)
			}
			if err := cw.Write(csvHeader); err != nil {
				h.abort(ctx, in.RunID, err)
			}
		} else {
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			one := make([]runs.Result, 1)
			write = func(r runs.Result) error {
				one[0] = r
				return enc.Encode(toAPIResults(one)[0])
			}
		}
		err := h.runs.EachResult(ctx, in.RunID, q, write)
		if cw != nil && err == nil {
			cw.Flush()
			err = cw.Error()
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			h.abort(ctx, in.RunID, err)
		}
	}}, nil
}

// abort ends an export that failed half way: the status is sent, so the
// connection is cut, and the client sees an incomplete download rather
// than a short file that looks whole.
func (h *resultsHandler) abort(ctx context.Context, runID string, err error) {
	if ctx.Err() == nil {
		h.logger().ErrorContext(ctx, "export failed", slog.String("run_id", runID), slog.Any("error", err))
	}
	panic(http.ErrAbortHandler)
}

// exportName is the download's file name: the run id, with any character
// that does not belong in a file name replaced.
func exportName(runID, format string) string {
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, runID)
	return name + "." + format
}

// csvRow fills row with r's columns, in csvHeader's order. Text is valid
// UTF-8: a response that is not gets its invalid bytes replaced, and its
// exact bytes in response_base64.
func csvRow(row []string, r runs.Result) {
	text := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	response, raw := r.Response, ""
	if !utf8.ValidString(response) {
		response, raw = text(response), base64.StdEncoding.EncodeToString([]byte(r.Response))
	}
	detail := func(k string) string {
		switch v := r.Details[k].(type) {
		case nil:
			return ""
		case string:
			return text(v)
		default:
			b, _ := json.Marshal(v)
			return string(b)
		}
	}
	copy(row, []string{
		text(r.RunID), text(r.TestID), strconv.Itoa(r.Repeat), text(r.Domain), strconv.Itoa(r.Level), text(r.Name), r.Status,
		strconv.FormatFloat(r.Score, 'g', -1, 64), strconv.FormatInt(r.DurationMS, 10),
		text(r.Prompt), response, raw, text(r.Expected.Answer), r.Expected.Type, detail("extracted_answer"), detail("error"),
		strconv.Itoa(r.PromptTokens), strconv.Itoa(r.CompletionTokens), r.CreatedAt,
		strconv.Itoa(r.CachedTokens), strconv.Itoa(r.ReasoningTokens), usd(r.CostUSD), usd(r.JudgeCostUSD),
		ms(r.TTFTMS), usd(r.OutputTokensPerS),
	})
}

// ms is a time in milliseconds as a CSV cell: empty for none.
func ms(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

// usd is a cost (or another figure) as a CSV cell: empty for none.
func usd(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}
