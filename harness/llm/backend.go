package llm

import (
	"context"
	"net/http"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Kinds of provider a Client speaks to (Options.Kind).
const (
	// KindOpenAI is the chat completions API of OpenAI and of every server
	// compatible with it (Ollama, vLLM, llama.cpp, LiteLLM...).
	KindOpenAI = "openai"
	// KindAnthropic is Anthropic's Messages API.
	KindAnthropic = "anthropic"
	// KindGemini is Google's Gemini API (generateContent).
	KindGemini = "gemini"
)

// Kinds lists the provider kinds, in the order documentation gives them.
var Kinds = []string{KindOpenAI, KindAnthropic, KindGemini}

// A backend speaks one provider kind's wire format, through that
// provider's official SDK: it turns a harness request into the kind's
// request, sends one attempt of it, and turns the answer back. The Client
// around it bounds, retries, classifies failures and counts, the same for
// every kind.
type backend interface {
	// prepare checks req and returns the function that sends one attempt
	// of it to model; an error matches harness.ErrInvalid.
	prepare(model string, req *harness.ChatRequest) (attemptFunc, error)
	// listModels lists the models the provider serves, in one attempt.
	listModels(ctx context.Context, hres **http.Response) ([]string, error)
}

// attemptFunc sends attempt n (from 1) of a prepared request. It stores
// the HTTP response it got, if any, in *hres: its status and headers
// classify a failure (Client.classify). An answer with a success status
// whose body cannot be understood is returned as malformed(...), so that
// it is retried and reported as such.
type attemptFunc func(actx context.Context, n int, hres **http.Response) (*harness.ChatResponse, error)
