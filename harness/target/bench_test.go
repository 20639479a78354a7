package target_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/target"
)

// BenchmarkSend measures one turn to a target on loopback that answers
// at once: the client's own cost (rendering, the request, reading the
// reply at its pointers), the part of a black-box run that is not the
// target's.
func BenchmarkSend(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"reply": {"text": "The answer is 42.", "sources": ["faq.md"]}}`)
	}))
	defer srv.Close()
	c, err := target.New(harness.TargetDefinition{ID: "bench", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer ${T}"},
		Body:     map[string]any{"messages": "{{messages}}", "session": "{{conversation_id}}"},
		Response: harness.TargetResponse{Answer: "/reply/text", Sources: "/reply/sources"}},
		target.Options{Getenv: func(string) string { return "token-value" }})
	if err != nil {
		b.Fatal(err)
	}
	turn := &target.Turn{ConversationID: "c", Messages: []harness.Message{
		{Role: harness.RoleUser, Content: "What is six times seven?"}}}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Send(ctx, turn); err != nil {
				b.Fatal(err)
			}
		}
	})
}
