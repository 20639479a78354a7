package shim

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gauntlet-eval/gauntlet/harness"
)

func TestErrorRoundTrip(t *testing.T) {
	ve := &harness.ValidationError{Fields: []harness.FieldError{{Field: "config.n", Message: "must be positive", Value: -1.0}}}
	for _, tc := range []struct {
		name string
		err  error
		code codes.Code
		is   error
	}{
		{"validation", ve, codes.InvalidArgument, harness.ErrInvalid},
		{"wrapped validation", fmt.Errorf("config: %w", ve), codes.InvalidArgument, harness.ErrInvalid},
		{"invalid", fmt.Errorf("bad: %w", harness.ErrInvalid), codes.InvalidArgument, harness.ErrInvalid},
		{"not found", fmt.Errorf("x: %w", harness.ErrNotFound), codes.NotFound, harness.ErrNotFound},
		{"conflict", harness.ErrConflict, codes.AlreadyExists, harness.ErrConflict},
		{"unauthorized", harness.ErrUnauthorized, codes.Unauthenticated, harness.ErrUnauthorized},
		{"unavailable", fmt.Errorf("down: %w", ErrUnavailable), codes.Unavailable, ErrUnavailable},
		{"deadline", fmt.Errorf("slow: %w", context.DeadlineExceeded), codes.DeadlineExceeded, context.DeadlineExceeded},
		{"canceled", context.Canceled, codes.Canceled, context.Canceled},
		{"plain", errors.New("oops"), codes.Unknown, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := ToStatus(tc.err)
			if c := status.Code(st); c != tc.code {
				t.Errorf("code %v, want %v", c, tc.code)
			}
			back := FromStatus(st)
			if back.Error() != tc.err.Error() {
				t.Errorf("text %q, want %q", back, tc.err)
			}
			if tc.is != nil && !errors.Is(back, tc.is) {
				t.Errorf("%v is not %v", back, tc.is)
			}
			if IsTransport(back) {
				t.Error("an implementation's error taken for the transport's")
			}
			var got *harness.ValidationError
			if errors.As(tc.err, new(*harness.ValidationError)) {
				if !errors.As(back, &got) || len(got.Fields) != 1 || got.Fields[0] != ve.Fields[0] {
					t.Errorf("validation error came back as %#v", back)
				}
			}
			// Crossing twice (plugin → host → plugin) keeps it all.
			if again := FromStatus(ToStatus(back)); again.Error() != tc.err.Error() || (tc.is != nil && !errors.Is(again, tc.is)) {
				t.Errorf("second crossing: %v", again)
			}
		})
	}
	if _, ok := FromStatus(ToStatus(ve)).(*harness.ValidationError); !ok {
		t.Error("a bare ValidationError does not come back as one")
	}
	if ToStatus(nil) != nil || FromStatus(nil) != nil {
		t.Error("nil is not nil")
	}
	// Statuses made by gRPC itself have no detail: UNAVAILABLE is the
	// transport failing.
	tr := FromStatus(status.Error(codes.Unavailable, "connection refused"))
	if !IsTransport(tr) || !errors.Is(tr, ErrUnavailable) {
		t.Errorf("transport failure: %v", tr)
	}
	if err := FromStatus(status.Error(codes.FailedPrecondition, "busy")); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("FAILED_PRECONDITION: %v, want ErrConflict", err)
	}
}
