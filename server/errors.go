package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
)

// apiProblem is the body of every error: RFC 9457 problem+json with
// "success": false, which clients of the success-flag answers look for.
type apiProblem struct {
	Status  int                 `json:"status" doc:"The HTTP status code."`
	Title   string              `json:"title" doc:"The standard text of the status code."`
	Detail  string              `json:"detail" doc:"What went wrong, for people."`
	Errors  []*apiProblemDetail `json:"errors,omitempty" doc:"For validation errors: one entry per invalid field."`
	Success bool                `json:"success" enum:"false" doc:"Always false."`
}

// apiProblemDetail is one invalid field of a problem.
type apiProblemDetail struct {
	Location string `json:"location,omitempty" doc:"Where: body.<field> (body.tests[3].expected.type), query.<name>, path.<name> or header.<name>."`
	Message  string `json:"message" doc:"What is wrong there."`
	Value    any    `json:"value,omitempty" doc:"The value found there, when it is a short scalar. The body is never sent back."`
}

// maxEchoedValue is the longest string value a problem detail repeats.
const maxEchoedValue = 200

// problemTransformer gives huma's errors, its own (malformed JSON,
// validation, 413, 415) and the handlers', the API's problem shape. It is
// a transformer of this API, not a replacement of huma.NewError, so
// importing this package changes nothing in other huma APIs.
func problemTransformer(_ huma.Context, _ string, v any) (any, error) {
	if em, ok := v.(*huma.ErrorModel); ok {
		return newProblem(em), nil
	}
	return v, nil
}

// newProblem converts a huma error. Validation entries are rewritten the
// way the library words them ("body.level: is required"); values that are
// the body, a part of it, or long are dropped, so an error never echoes
// what was sent; huma's bare "validation failed" detail gets its entries
// appended, and a 400 from the JSON decoder says "malformed JSON".
func newProblem(em *huma.ErrorModel) *apiProblem {
	p := &apiProblem{Status: em.Status, Title: em.Title, Detail: em.Detail}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	for _, d := range em.Errors {
		if d == nil {
			continue
		}
		pd := &apiProblemDetail{Location: d.Location, Message: d.Message, Value: echoable(d.Value)}
		if d.Location == "body" {
			pd.Value = nil
		}
		// huma: "expected required property level to be present" at the
		// object that lacks it.
		if name, ok := strings.CutPrefix(d.Message, "expected required property "); ok {
			if name, ok = strings.CutSuffix(name, " to be present"); ok {
				pd.Location, pd.Message, pd.Value = joinLocation(d.Location, name), "is required", nil
			}
		}
		p.Errors = append(p.Errors, pd)
	}
	if p.Detail == "validation failed" && len(p.Errors) > 0 {
		parts := make([]string, len(p.Errors))
		for i, d := range p.Errors {
			parts[i] = d.Message
			if d.Location != "" {
				parts[i] = d.Location + ": " + d.Message
			}
		}
		p.Detail += ": " + strings.Join(parts, "; ")
	}
	switch rest, huma := strings.CutPrefix(p.Detail, "validation failed"); {
	case huma && p.Status == http.StatusBadRequest:
		p.Detail = "malformed JSON" + rest
	case huma && p.Status == http.StatusUnsupportedMediaType:
		p.Detail = "send JSON (Content-Type: application/json)" + strings.TrimPrefix(rest, ": body")
	}
	if p.Detail == "" {
		p.Detail = p.Title
	}
	return p
}

func joinLocation(base, name string) string {
	if base == "" {
		return name
	}
	return base + "." + name
}

// echoable returns v when a problem may repeat it: a number, a boolean or
// a short string.
func echoable(v any) any {
	switch v := v.(type) {
	case bool, float64, float32, int, int64, json.Number:
		return v
	case string:
		if len(v) <= maxEchoedValue {
			return v
		}
	}
	return nil
}

// problems maps the library's errors to HTTP errors. Every handler has
// one; the logger receives the unexpected failures.
type problems struct {
	log *slog.Logger
}

// problem maps an error from the library to an HTTP error: validation to
// 422 with one entry per field, ErrNotFound to 404, ErrConflict to 409,
// anything else to 500 (logged, not shown).
func (p problems) problem(ctx context.Context, err error) error {
	var ve *harness.ValidationError
	var se huma.StatusError
	switch {
	case errors.As(err, &se):
		// Already an HTTP error: a handler's own check, run by the library
		// (a precondition checked under the catalog's lock).
		return err
	case errors.As(err, &ve):
		return validationProblem(ve, "body.", "")
	case errors.Is(err, harness.ErrInvalid):
		return huma.Error422UnprocessableEntity(err.Error())
	case errors.Is(err, harness.ErrNotFound):
		return huma.Error404NotFound(err.Error())
	case errors.Is(err, harness.ErrConflict):
		return huma.Error409Conflict(err.Error())
	case errors.Is(err, harness.ErrUnauthorized):
		return huma.Error401Unauthorized(err.Error())
	case errors.Is(err, kb.ErrTooLarge):
		return huma.Error413RequestEntityTooLarge(err.Error())
	case errors.Is(err, kb.ErrUnsupported):
		return huma.Error415UnsupportedMediaType(err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return huma.NewError(http.StatusServiceUnavailable, "request cancelled or timed out")
	default:
		p.logger().ErrorContext(ctx, "request failed", slog.Any("error", err))
		return huma.Error500InternalServerError("internal error; the server log has the details")
	}
}

// queryProblem is problem for an operation whose validated fields are
// query parameters: each invalid field is located at query.<name>.
func (p problems) queryProblem(ctx context.Context, err error) error {
	var ve *harness.ValidationError
	if errors.As(err, &ve) {
		return validationProblem(ve, "query.", "query.")
	}
	return p.problem(ctx, err)
}

// validationProblem is the 422 of a validation error: one detail per
// field, located at where + the field's name; each field's message in the
// title is prefixed with named + the field's name.
func validationProblem(ve *harness.ValidationError, where, named string) error {
	details := make([]error, len(ve.Fields))
	msgs := make([]string, len(ve.Fields))
	for i, f := range ve.Fields {
		details[i] = &huma.ErrorDetail{Location: where + f.Field, Message: f.Message, Value: f.Value}
		msgs[i] = named + f.Error()
	}
	return huma.Error422UnprocessableEntity("validation failed: "+strings.Join(msgs, "; "), details...)
}

func (p problems) logger() *slog.Logger {
	if p.log == nil {
		return slog.Default()
	}
	return p.log
}

// writeError writes the problem+json body of err, mapped as problem maps
// it, from a plain (non-huma) handler.
func (p problems) writeError(w http.ResponseWriter, r *http.Request, err error) {
	writeStatusError(w, p.problem(r.Context(), err))
}

// writeStatusError writes a huma error as the API's problem.
func writeStatusError(w http.ResponseWriter, err error) {
	var em *huma.ErrorModel
	if !errors.As(err, &em) {
		writeProblem(w, http.StatusInternalServerError, "internal error")
		return
	}
	pr := newProblem(em)
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(pr.Status)
	jsonEncoder(w).Encode(pr)
}

// writeProblem writes a problem with no field entries (middleware and
// plain handlers).
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	jsonEncoder(w).Encode(&apiProblem{Status: status, Title: http.StatusText(status), Detail: detail})
}

// jsonEncoder returns an encoder that leaves <, > and & as they are.
func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
