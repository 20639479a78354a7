package shim

import (
	"context"
	"encoding/json"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gauntlet-eval/gauntlet/harness"
	pb "github.com/gauntlet-eval/gauntlet/harness/plugin/proto"
)

// ErrUnavailable reports that a plugin (or the host, seen from a plugin)
// cannot serve a call: the process crashed, hangs, could not start, or an
// implementation said so itself. It travels as gRPC UNAVAILABLE.
var ErrUnavailable = errors.New("unavailable")

// The kinds of ErrorDetail: which sentinel an error wrapped.
const (
	kindNotFound     = "not_found"
	kindInvalid      = "invalid"
	kindConflict     = "conflict"
	kindUnauthorized = "unauthorized"
	kindUnavailable  = "unavailable"
	kindCanceled     = "canceled"
	kindDeadline     = "deadline_exceeded"
)

// classify names the sentinel err wraps and the gRPC code it travels as.
func classify(err error) (string, codes.Code) {
	switch {
	case errors.Is(err, harness.ErrInvalid):
		return kindInvalid, codes.InvalidArgument
	case errors.Is(err, harness.ErrNotFound):
		return kindNotFound, codes.NotFound
	case errors.Is(err, harness.ErrConflict):
		return kindConflict, codes.AlreadyExists
	case errors.Is(err, harness.ErrUnauthorized):
		return kindUnauthorized, codes.Unauthenticated
	case errors.Is(err, ErrUnavailable):
		return kindUnavailable, codes.Unavailable
	case errors.Is(err, context.DeadlineExceeded):
		return kindDeadline, codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return kindCanceled, codes.Canceled
	}
	return "", codes.Unknown
}

// sentinel is the error a kind (or, for errors without ErrorDetail, a
// code) stands for.
func sentinel(kind string, code codes.Code) error {
	switch kind {
	case kindInvalid:
		return harness.ErrInvalid
	case kindNotFound:
		return harness.ErrNotFound
	case kindConflict:
		return harness.ErrConflict
	case kindUnauthorized:
		return harness.ErrUnauthorized
	case kindUnavailable:
		return ErrUnavailable
	case kindDeadline:
		return context.DeadlineExceeded
	case kindCanceled:
		return context.Canceled
	case "":
	default:
		return nil
	}
	switch code {
	case codes.InvalidArgument:
		return harness.ErrInvalid
	case codes.NotFound:
		return harness.ErrNotFound
	case codes.AlreadyExists, codes.FailedPrecondition:
		return harness.ErrConflict
	case codes.Unauthenticated, codes.PermissionDenied:
		return harness.ErrUnauthorized
	case codes.Unavailable:
		return ErrUnavailable
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	case codes.Canceled:
		return context.Canceled
	}
	return nil
}

// ToStatus turns an implementation's error into the gRPC status error
// that crosses the boundary: the code says its kind, the message is its
// text, and an ErrorDetail marks it as the implementation's (not the
// transport's) and carries a ValidationError's fields.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	kind, code := classify(err)
	detail := &pb.ErrorDetail{Kind: kind}
	var ve *harness.ValidationError
	if errors.As(err, &ve) {
		for _, f := range ve.Fields {
			fe := &pb.FieldError{Field: f.Field, Message: f.Message}
			if f.Value != nil {
				fe.ValueJson, _ = json.Marshal(f.Value)
			}
			detail.Fields = append(detail.Fields, fe)
		}
	}
	st := status.New(code, err.Error())
	if withDetail, derr := st.WithDetails(detail); derr == nil {
		st = withDetail
	}
	return st.Err()
}

// Error is an error that crossed the boundary. Its text is the original
// error's; errors.Is matches the sentinel it wrapped (harness.ErrNotFound,
// harness.ErrInvalid, harness.ErrConflict, harness.ErrUnauthorized,
// ErrUnavailable, context.Canceled, context.DeadlineExceeded) and
// errors.As finds a *harness.ValidationError with its fields.
type Error struct {
	Msg  string
	Code codes.Code
	// Transport is true when the status came from gRPC itself rather than
	// from the implementation: the other side is gone or unreachable.
	Transport bool

	kind error
	ve   *harness.ValidationError
}

// Error returns the original error's text.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns the sentinel and the ValidationError, when there are.
func (e *Error) Unwrap() []error {
	var out []error
	if e.kind != nil {
		out = append(out, e.kind)
	}
	if e.ve != nil {
		out = append(out, e.ve)
	}
	return out
}

// GRPCStatus lets status.FromError see the original status, so that an
// error passed back across another boundary keeps its code.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Msg) }

// FromStatus turns a gRPC status error back into an error whose kind
// errors.Is and errors.As recognise (see Error). A ValidationError that
// was returned as is comes back as a *harness.ValidationError. Errors that
// are not statuses are returned unchanged.
func FromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	var detail *pb.ErrorDetail
	for _, d := range st.Details() {
		if ed, ok := d.(*pb.ErrorDetail); ok {
			detail = ed
			break
		}
	}
	e := &Error{Msg: st.Message(), Code: st.Code()}
	if detail == nil {
		e.kind = sentinel("", st.Code())
		e.Transport = st.Code() == codes.Unavailable
		if e.Transport {
			e.Msg = "connection lost: " + e.Msg
		}
		return e
	}
	e.kind = sentinel(detail.Kind, st.Code())
	if len(detail.Fields) > 0 {
		e.ve = &harness.ValidationError{}
		for _, f := range detail.Fields {
			fe := harness.FieldError{Field: f.Field, Message: f.Message}
			if len(f.ValueJson) > 0 {
				_ = json.Unmarshal(f.ValueJson, &fe.Value)
			}
			e.ve.Fields = append(e.ve.Fields, fe)
		}
		if e.ve.Error() == e.Msg {
			return e.ve
		}
	}
	return e
}

// IsTransport reports whether err is a failure of the connection to the
// other side (gRPC UNAVAILABLE with no ErrorDetail) rather than an error
// an implementation returned.
func IsTransport(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Transport
}
