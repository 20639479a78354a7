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
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

// apiError is the problem+json body of every error: RFC 9457 fields plus
// "success": false, which the spec's clients look for.
type apiError struct {
	huma.ErrorModel
	Success bool `json:"success" doc:"Always false on errors."`
}

func init() {
	// huma builds every error through NewError (validation, 400, 413...),
	// so replacing it gives all of them the same shape.
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		details := make([]*huma.ErrorDetail, 0, len(errs))
		for _, err := range errs {
			if err == nil {
				continue
			}
			if d, ok := err.(huma.ErrorDetailer); ok {
				details = append(details, d.ErrorDetail())
			} else {
				details = append(details, &huma.ErrorDetail{Message: err.Error()})
			}
		}
		if msg == "validation failed" && len(details) > 0 {
			// huma's own errors (malformed JSON, wrong types): say what.
			parts := make([]string, len(details))
			for i, d := range details {
				parts[i] = d.Message
				if d.Location != "" {
					parts[i] = d.Location + ": " + d.Message
				}
			}
			msg += ": " + strings.Join(parts, "; ")
		}
		if status == http.StatusBadRequest && strings.HasPrefix(msg, "validation failed") {
			msg = "malformed JSON" + strings.TrimPrefix(msg, "validation failed")
		}
		return &apiError{ErrorModel: huma.ErrorModel{
			Status: status,
			Title:  http.StatusText(status),
			Detail: msg,
			Errors: details,
		}}
	}
}

// problem maps an error from the library to an HTTP error: validation to
// 422 with one entry per field, ErrNotFound to 404, ErrConflict to 409,
// anything else to 500 (logged, not shown).
func (s *Server) problem(ctx context.Context, err error) error {
	var ve *harness.ValidationError
	switch {
	case errors.As(err, &ve):
		details := make([]error, len(ve.Fields))
		msgs := make([]string, len(ve.Fields))
		for i, f := range ve.Fields {
			details[i] = &huma.ErrorDetail{Location: "body." + f.Field, Message: f.Message, Value: f.Value}
			msgs[i] = f.Error()
		}
		return huma.Error422UnprocessableEntity("validation failed: "+strings.Join(msgs, "; "), details...)
	case errors.Is(err, harness.ErrInvalid):
		return huma.Error422UnprocessableEntity(err.Error())
	case errors.Is(err, harness.ErrNotFound):
		return huma.Error404NotFound(err.Error())
	case errors.Is(err, harness.ErrConflict):
		return huma.Error409Conflict(err.Error())
	case errors.Is(err, harness.ErrUnauthorized):
		return huma.Error401Unauthorized(err.Error())
	case errors.Is(err, agent.ErrTooLarge):
		return huma.Error413RequestEntityTooLarge(err.Error())
	case errors.Is(err, agent.ErrUnsupported):
		return huma.Error415UnsupportedMediaType(err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return huma.NewError(http.StatusServiceUnavailable, "request cancelled or timed out")
	default:
		s.log.ErrorContext(ctx, "request failed", slog.Any("error", err))
		return huma.Error500InternalServerError("internal error; the server log has the details")
	}
}

// writeError writes the problem+json body of err, mapped as problem maps
// it, from a plain (non-huma) handler.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	se, ok := s.problem(r.Context(), err).(huma.StatusError)
	if !ok {
		writeProblem(w, http.StatusInternalServerError, "internal error")
		return
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(se.GetStatus())
	jsonEncoder(w).Encode(se)
}

// jsonEncoder returns an encoder that leaves <, > and & as they are.
func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// writeProblem writes an error outside huma (middleware).
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	body := `{"status":` + itoa(status) + `,"title":` + quote(http.StatusText(status)) +
		`,"detail":` + quote(detail) + `,"success":false}`
	w.Write([]byte(body))
}
