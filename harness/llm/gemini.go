package llm

import (
	"errors"
	"net/http"
)

// newGemini returns the backend of the gemini kind. Under construction: a
// later commit of this change set fills it in.
func newGemini(opts Options, hc *http.Client) (backend, error) {
	return nil, errors.New("this provider kind is not built yet")
}
