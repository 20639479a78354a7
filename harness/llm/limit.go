package llm

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/openai/openai-go/v3/option"
)

// ErrResponseTooLarge is matched, with errors.Is, by an *Error whose
// endpoint sent a response body larger than Options.MaxResponseBytes. Such
// a call is not retried: the same request would most likely get the same
// answer.
var ErrResponseTooLarge = errors.New("response too large")

// tooLargeError is the error a limited body returns past its limit.
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
		res.Body = &limitedBody{rc: res.Body, left: limit, limit: limit}
		return res, nil
	}
}

// limitedBody reads at most limit+1 bytes from rc: limit bytes pass, the
// next one turns into a *tooLargeError (as http.MaxBytesReader does for
// request bodies).
type limitedBody struct {
	rc    io.ReadCloser
	left  int64 // bytes that may still pass
	limit int64
	err   error // sticky: once failed, every Read fails the same way
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Ask for one byte more than may pass, to learn whether there is more.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		b.err = err
		return n, err
	}
	n = int(b.left)
	b.left = 0
	b.err = &tooLargeError{b.limit}
	return n, b.err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
