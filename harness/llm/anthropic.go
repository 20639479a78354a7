package llm

import (
	"errors"
	"net/http"
)

// newAnthropic returns the backend of the anthropic kind. Under construction: a
// later commit of this change set fills it in.
func newAnthropic(opts Options, hc *http.Client) (backend, error) {
	return nil, errors.New("this provider kind is not built yet")
}
