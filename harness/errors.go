package harness

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors shared by the library and the server. Match them with
// errors.Is; the server maps them to HTTP status codes in one place.
var (
	// ErrNotFound reports that a resource with the given id does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict reports a duplicate id, a resource still in use, or a
	// definitions file changed on disk since the cache last read it.
	ErrConflict = errors.New("conflict")
	// ErrInvalid reports input that fails validation. Errors that wrap it are
	// usually a *ValidationError naming the offending fields.
	ErrInvalid = errors.New("invalid")
	// ErrUnreachable reports that a remote endpoint could not be reached at
	// all: the connection was refused or its host name did not resolve. A
	// model client's errors match it so that a caller can tell "the
	// endpoint is down" from "the endpoint answered badly".
	ErrUnreachable = errors.New("unreachable")
)

// FieldError is one validation failure: the field it concerns, written as a
// path such as "expected.type" or "tests[3].id", and what is wrong with it.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
	Value   any    `json:"value,omitempty"`
}

// Error returns "field: message", or the message alone without a field.
func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// ValidationError collects the field errors found while validating a
// resource. It matches ErrInvalid with errors.Is.
type ValidationError struct {
	Fields []FieldError
}

// Error lists every field error, separated by semicolons.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Error()
	}
	return "invalid: " + strings.Join(parts, "; ")
}

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Add records a field error.
func (e *ValidationError) Add(field, format string, args ...any) {
	e.Fields = append(e.Fields, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Merge adds the field errors of err, each field prefixed with prefix, or
// err's text when it is not a *ValidationError.
func (e *ValidationError) Merge(prefix string, err error) {
	if err == nil {
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		e.Fields = append(e.Fields, FieldError{Field: prefix, Message: err.Error()})
		return
	}
	for _, f := range ve.Fields {
		f.Field = joinField(prefix, f.Field)
		e.Fields = append(e.Fields, f)
	}
}

// Err returns e when it holds at least one field error, else nil.
func (e *ValidationError) Err() error {
	if len(e.Fields) == 0 {
		return nil
	}
	return e
}

// Invalid returns a *ValidationError for a single field.
func Invalid(field, format string, args ...any) error {
	ve := &ValidationError{}
	ve.Add(field, format, args...)
	return ve
}

func joinField(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	default:
		return prefix + "." + field
	}
}
