package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness/dataset"
)

type datasetHandler struct {
	problems
	store dataset.Store
}

// apiDatasetMapping names the columns of a dataset import.
type apiDatasetMapping struct {
	Prompt string `json:"prompt,omitempty" doc:"Column of the prompt; default the first of prompt, input, question."`
	Answer string `json:"answer,omitempty" doc:"Column of the expected answer; default answer, else target."`
	Type   string `json:"type,omitempty" doc:"Column of the expected type; default type."`
	ID     string `json:"id,omitempty" doc:"Column of the test id; default id. Rows without one get an id generated from their content."`
}

// apiDatasetImport is the body of import-tests.
type apiDatasetImport struct {
	DomainID    string             `json:"domain_id,omitempty" api:"required" doc:"Domain the tests go to; it must exist."`
	Level       *int               `json:"level,omitempty" api:"required" doc:"Level the tests go to, 0 to 1000."`
	Format      string             `json:"format,omitempty" api:"required" doc:"jsonl or csv."`
	Data        string             `json:"data" doc:"The file's text. CSV has a header naming the columns (but MMLU's layout); a UTF-8 byte order mark is ignored."`
	Mapping     *apiDatasetMapping `json:"mapping,omitempty"`
	Preset      string             `json:"preset,omitempty" doc:"gsm8k (JSONL question/answer, the answer after ####, numeric) or mmlu (question and choices A-D, a letter, choice)."`
	Delimiter   string             `json:"delimiter,omitempty" doc:"CSV field separator: one character such as ; or \"tab\". Default a comma."`
	Type        string             `json:"type,omitempty" doc:"Expected type of rows without a type column; default exact. Not with a preset."`
	SkipInvalid bool               `json:"skip_invalid,omitempty" doc:"Write the valid rows when some are refused. Without it, one refused row means nothing is written."`
}

// apiDatasetRowError is a row an import refused.
type apiDatasetRowError struct {
	Row     int    `json:"row" doc:"The row among the data rows, from 1: the CSV header and blank JSONL lines do not count."`
	Line    int    `json:"line" doc:"The line of the data where the row starts, from 1, counting every line."`
	Column  string `json:"column,omitempty" doc:"The column at fault, when one is."`
	Message string `json:"message"`
}

// apiDatasetImportResult is the answer of import-tests.
type apiDatasetImportResult struct {
	Success bool                 `json:"success" doc:"True when the rows were written; false when some were refused and skip_invalid was not set (then nothing was written)."`
	Rows    int                  `json:"rows" doc:"Data rows read."`
	Created int                  `json:"created" doc:"New tests written."`
	Updated int                  `json:"updated" doc:"Tests of the level replaced by a row with the same id (a re-import)."`
	Skipped int                  `json:"skipped" doc:"Rows not written: the refused ones, or every row when nothing was written."`
	Errors  []apiDatasetRowError `json:"errors" doc:"The refused rows, in row order; a row may have several entries."`
}

type importTestsInput struct {
	Body apiDatasetImport
}

type importTestsOutput struct {
	Body apiDatasetImportResult
}

// registerDatasets registers the dataset import.
func registerDatasets(api huma.API, store dataset.Store, log *slog.Logger) {
	h := &datasetHandler{problems{log}, store}
	register(api, huma.Operation{
		OperationID: "import-tests", Method: http.MethodPost, Path: "/api/settings/tests/import",
		Summary: "Import tests from a dataset", Tags: []string{tagTests}, MaxBodyBytes: MaxImportBytes,
		Description: "Creates tests in one level from the rows of a JSON Lines or CSV file, in one write. " +
			"Columns: prompt (or input, question), answer (or target), optional type and id, renamed by mapping; " +
			"presets gsm8k and mmlu read those datasets' layouts. Every row is validated as create-test would, size included " +
			"(at most 1 MiB of text per test, create-test's body limit); " +
			"refused rows are listed with their row, line and column, and then nothing is written (success false) " +
			"unless skip_invalid is set. Rows without an id get one generated from their content, so importing the same " +
			"file again replaces its tests rather than adding copies; an id that names a test of another level is refused. " +
			"422 for a bad format, preset, delimiter or mapping, a CSV header without the needed columns, no rows, " +
			"or an unknown domain; 413 for a body over 64 MiB (unless the server sets another limit) or more than 100 000 rows; " +
			"409 when the level's file was edited by hand since the last sync.",
		Errors: []int{http.StatusConflict, http.StatusRequestEntityTooLarge},
	}, h.importTests)
}

func (h *datasetHandler) importTests(ctx context.Context, in *importTestsInput) (*importTestsOutput, error) {
	b := in.Body
	if b.Level == nil {
		return nil, huma.Error422UnprocessableEntity("validation failed: level: is required",
			&huma.ErrorDetail{Location: "body.level", Message: "is required"})
	}
	opts := dataset.Options{
		Format: strings.ToLower(b.Format), Preset: strings.ToLower(b.Preset), Delimiter: b.Delimiter, Type: b.Type,
		DomainID: b.DomainID, Level: *b.Level, SkipInvalid: b.SkipInvalid,
	}
	if b.Mapping != nil {
		opts.Mapping = dataset.Mapping{Prompt: b.Mapping.Prompt, Answer: b.Mapping.Answer, Type: b.Mapping.Type, ID: b.Mapping.ID}
	}
	rep, err := dataset.Import(ctx, h.store, strings.NewReader(b.Data), opts)
	if errors.Is(err, dataset.ErrTooLarge) {
		return nil, huma.Error413RequestEntityTooLarge(err.Error())
	}
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	out := apiDatasetImportResult{
		Success: rep.Written, Rows: rep.Total, Created: rep.Created, Updated: rep.Updated, Skipped: rep.Skipped,
		Errors: make([]apiDatasetRowError, len(rep.Errors)),
	}
	for i, e := range rep.Errors {
		out.Errors[i] = apiDatasetRowError{Row: e.Row, Line: e.Line, Column: e.Column, Message: e.Message}
	}
	return &importTestsOutput{Body: out}, nil
}
