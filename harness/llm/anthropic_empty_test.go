package llm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestAnthropicEmptyText: the Messages API refuses a text block that is
// empty, or a message whose text is whitespace only, so the client sends
// none: an empty or blank system prompt, user message, assistant text or
// tool result is left out (a message left with no content at all is not
// sent, and the API joins the turns around it), and a request with no
// user content left is refused before anything is sent, as invalid, not
// retried.
func TestAnthropicEmptyText(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{APIKey: secretKey, Respond: rec.respond})
	defer srv.Close()
	c := kindClient(t, KindAnthropic, srv, Options{APIKey: secretKey, Model: "claude-test", MaxRetries: 2})
	ctx := context.Background()
	for _, blank := range []string{"", " \n\t"} {
		resp, err := c.Chat(ctx, &harness.ChatRequest{Messages: []harness.Message{
			{Role: harness.RoleSystem, Content: blank},
			{Role: harness.RoleSystem, Content: "Be brief."},
			userMsg("What is 1 + 2?"),
			{Role: harness.RoleAssistant, Content: blank},
			userMsg(blank),
			{Role: harness.RoleAssistant, Content: "Let me look.", ToolCalls: []harness.ToolCall{{ID: "toolu_1", Name: "f"}}},
			{Role: harness.RoleTool, ToolCallID: "toolu_1", Content: blank},
			userMsg(blank),
			userMsg("What is 300 + 33?"),
		}})
		if err != nil {
			t.Fatalf("blank %q: %v", blank, err)
		}
		if resp.Message.Content != "The answer is 333." {
			t.Errorf("blank %q: answer %q", blank, resp.Message.Content)
		}
		body := wireBody(t, rec.last(t))
		got := anthropicJSON(body["messages"])
		want := `[{"content":[{"text":"What is 1 + 2?","type":"text"}],"role":"user"},` +
			`{"content":[{"text":"Let me look.","type":"text"},{"id":"toolu_1","input":{},"name":"f","type":"tool_use"}],"role":"assistant"},` +
			`{"content":[{"tool_use_id":"toolu_1","type":"tool_result"},{"text":"What is 300 + 33?","type":"text"}],"role":"user"}]`
		if got != want {
			t.Errorf("blank %q: messages on the wire\n%s\nwant\n%s", blank, got, want)
		}
		if s := anthropicJSON(body["system"]); s != `[{"text":"Be brief.","type":"text"}]` {
			t.Errorf("blank %q: system on the wire %s", blank, s)
		}
	}

	// Nothing a user said is left: refused before it is sent.
	before := srv.Stats().ChatCompletions
	for _, msgs := range [][]harness.Message{
		{userMsg("")},
		{{Role: harness.RoleSystem, Content: "Be brief."}, userMsg("  ")},
		{userMsg(""), {Role: harness.RoleAssistant, Content: "Hello."}},
	} {
		_, err := c.Chat(ctx, &harness.ChatRequest{Messages: msgs})
		if !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "messages") {
			t.Errorf("%+v: err %v; want invalid, naming the messages", msgs, err)
		}
	}
	if n := srv.Stats().ChatCompletions; n != before {
		t.Errorf("%d requests sent for requests with nothing to say", n-before)
	}
}
