package llm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// testKinds are the provider kinds the cross-kind tests run on; each
// kind's test file adds its own in an init function, with its base URL
// on the fake endpoint.
var testKinds = []testKind{{kind: KindOpenAI, base: func(srvURL string) string { return srvURL }}}

type testKind struct {
	kind string
	// base turns the fake endpoint's URL (http://127.0.0.1:PORT/v1) into
	// the kind's base URL.
	base func(srvURL string) string
}

// eachKind runs f once per provider kind, as a subtest named after it,
// with a fake endpoint of opts and a client of that kind to it.
func eachKind(t *testing.T, opts llmtest.Options, copts Options, f func(t *testing.T, c *Client, srv *llmtest.Server)) {
	for _, k := range testKinds {
		t.Run(k.kind, func(t *testing.T) {
			srv := llmtest.NewServer(opts)
			defer srv.Close()
			o := copts
			o.Kind = k.kind
			f(t, newClient(t, k.base(srv.URL), o), srv)
		})
	}
}

// TestKindsAnswerAlike checks that every kind gets the same answers from
// the fake endpoint, with the usage it counts.
func TestKindsAnswerAlike(t *testing.T) {
	eachKind(t, llmtest.Options{Answers: map[string]string{"capital of France": "It is Paris."}}, Options{},
		func(t *testing.T, c *Client, srv *llmtest.Server) {
			resp, err := c.Chat(context.Background(), &harness.ChatRequest{Messages: []harness.Message{
				{Role: harness.RoleSystem, Content: "Answer briefly."}, userMsg("What is the capital of France?")}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "It is Paris." || resp.Message.Role != harness.RoleAssistant {
				t.Fatalf("answer %+v", resp.Message)
			}
			if resp.Usage.PromptTokens <= 0 || resp.Usage.CompletionTokens != llmtest.CountTokens("It is Paris.") ||
				resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
				t.Fatalf("usage %+v", resp.Usage)
			}
		})
}

// TestKindsErrors checks that a failure means the same on every kind: a
// 400 is not retried, a 500 is, and the API key is never in the error.
func TestKindsErrors(t *testing.T) {
	eachKind(t, llmtest.Options{APIKey: secretKey, Respond: func(req *llmtest.Request) *llmtest.Reply {
		if strings.Contains(req.LastUser(), "bad") {
			return &llmtest.Reply{Status: 400, Content: "bad request " + secretKey}
		}
		return nil
	}, ServerErrors: llmtest.Schedule{First: 1}}, Options{APIKey: secretKey, MaxRetries: 2},
		func(t *testing.T, c *Client, srv *llmtest.Server) {
			resp, err := c.Chat(context.Background(), ask("What is 2 + 2?"))
			if err != nil || resp.Message.Content == "" {
				t.Fatalf("after a 500: %v, %+v", err, resp)
			}
			if st := c.Stats(); st.Retries != 1 {
				t.Fatalf("stats %+v, want one retry", st)
			}
			_, err = c.Chat(context.Background(), ask("a bad one"))
			var e *Error
			if !errors.As(err, &e) || e.StatusCode != 400 || e.Attempts != 1 || e.Retryable() {
				t.Fatalf("400: %v", err)
			}
			if strings.Contains(err.Error(), secretKey) || !strings.Contains(err.Error(), "bad request") {
				t.Fatalf("error %q: the key shows, or the endpoint's message does not", err)
			}
		})
}
