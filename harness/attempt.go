package harness

import (
	"context"
	"errors"
	"time"
)

// Statuses of one attempt of a chat request (Attempt.Status).
const (
	// AttemptOK: the endpoint answered.
	AttemptOK = "ok"
	// AttemptCached: the answer came from a response cache; no request
	// went to the endpoint.
	AttemptCached = "cached"
	// AttemptHTTPError: the endpoint answered with an error status
	// (Attempt.HTTPStatus).
	AttemptHTTPError = "http_error"
	// AttemptTimeout: no answer within the attempt's time limit.
	AttemptTimeout = "timeout"
	// AttemptUnreachable: the endpoint could not be reached at all
	// (connection refused, host name not resolved).
	AttemptUnreachable = "unreachable"
	// AttemptTooLarge: the answer was larger than the client reads.
	AttemptTooLarge = "too_large"
	// AttemptMalformed: the endpoint answered with a success status but a
	// body that is not a chat completion.
	AttemptMalformed = "malformed"
	// AttemptCancelled: the caller gave up (the run was stopped).
	AttemptCancelled = "cancelled"
	// AttemptFailed: any other failure (a connection lost midway, an
	// error of a client that says no more).
	AttemptFailed = "error"
)

// Attempt is one attempt of a chat request: a request a client retries
// makes several. A ChatModel that retries reports each attempt to
// ChatRequest.OnAttempt when it is set; harness/llm does.
type Attempt struct {
	// N numbers the attempts of one request from 1.
	N int
	// Start is when the attempt began; Duration how long it took, up to
	// its answer or its failure (the wait before a retry is not part of
	// it).
	Start    time.Time
	Duration time.Duration
	// Usage counts the tokens of an attempt that got an answer.
	Usage Usage
	// TTFT is the time to the first token of a streamed answer; 0 when
	// the answer was not streamed.
	TTFT time.Duration
	// Status is AttemptOK, AttemptCached, or what went wrong (the other
	// Attempt* statuses); HTTPStatus is the endpoint's status code when
	// it answered with one, else 0.
	Status     string
	HTTPStatus int
	// Err is the attempt's failure; nil when Status is AttemptOK or
	// AttemptCached.
	Err error
}

// AttemptStatusOf classifies the failure of a chat request for
// Attempt.Status: nil is AttemptOK; an error with a method
// AttemptStatus() (string, int) (as harness/llm's errors have) says
// itself, with its HTTP status; a cancelled or timed-out context, and
// ErrUnreachable, are recognised; anything else is AttemptFailed.
func AttemptStatusOf(err error) (status string, httpStatus int) {
	var self interface{ AttemptStatus() (string, int) }
	switch {
	case err == nil:
		return AttemptOK, 0
	case errors.As(err, &self):
		return self.AttemptStatus()
	case errors.Is(err, context.Canceled):
		return AttemptCancelled, 0
	case errors.Is(err, context.DeadlineExceeded):
		return AttemptTimeout, 0
	case errors.Is(err, ErrUnreachable):
		return AttemptUnreachable, 0
	}
	return AttemptFailed, 0
}
