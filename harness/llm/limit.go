package llm

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3/option"

	"github.com/gauntlet-eval/gauntlet/internal/limitio"
)

// ErrResponseTooLarge is matched, with errors.Is, by an *Error whose
// endpoint sent a response body larger than Options.MaxResponseBytes. Such
// a call is not retried: the same request would most likely get the same
// answer.
var ErrResponseTooLarge = errors.New("response too large")

// tooLargeError is the error a limited body (a limitio.Reader) returns
// past its limit.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("response too large: more than %d bytes", e.limit)
}

func (e *tooLargeError) Is(target error) bool { return target == ErrResponseTooLarge }

// limitBody is a middleware that bounds the body of every response: the
// SDK reads a body whole with io.ReadAll, so the bound must sit under it.
// A response whose Content-Length already says it is too large is refused
// before a byte of its body is read; any other gets a body that fails once
// more than limit bytes have come.
func limitBody(limit int64) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err != nil || res == nil || res.Body == nil {
			return res, err
		}
		if res.ContentLength > limit {
			res.Body.Close()
			res.Body = http.NoBody
			return res, &tooLargeError{limit}
		}
		res.Body = limitio.New(res.Body, limit, &tooLargeError{limit})
		return res, nil
	}
}
