package judge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/evaluators/judge"
	"github.com/gauntlet-eval/gauntlet/harness"
)

// TestJudgeConversation: for a test with a simulated user, the judge
// sees the user's persona, the goal as its criteria and the whole
// conversation; for a later turn of a multi-turn test, the conversation
// before the turn and the turn's message.
func TestJudgeConversation(t *testing.T) {
	conv := []harness.Message{
		{Role: harness.RoleSystem, Content: "Be kind."},
		{Role: harness.RoleUser, Content: "I want a refund."},
		{Role: harness.RoleAssistant, Content: "Which order?"},
		{Role: harness.RoleUser, Content: "Order 42."},
		{Role: harness.RoleAssistant, Content: "Refunded."},
	}
	t.Run("simulated user", func(t *testing.T) {
		m := &fakeModel{replies: []string{"Score: 1"}}
		test := harness.Test{ID: "s", SimulatedUser: &harness.SimulatedUser{Persona: "An angry customer.", Goal: "Get order 42 refunded.", MaxTurns: 4}}
		res, err := judge.New(judge.Options{Client: m}).Evaluate(context.Background(), &harness.EvalRequest{
			Test: test, Evaluator: cfg(), Response: "Refunded.", Messages: conv})
		if err != nil || !res.Passed {
			t.Fatalf("%+v, %v", res, err)
		}
		req := m.requests()[0]
		body := req.Messages[1].Content
		for _, want := range []string{"<persona>\nAn angry customer.\n</persona>", "<goal>\nGet order 42 refunded.\n</goal>",
			"User: I want a refund.\n\nAssistant: Which order?\n\nUser: Order 42.\n\nAssistant: Refunded.", "<response>\nRefunded.\n</response>"} {
			if !strings.Contains(body, want) {
				t.Errorf("the judge's request lacks %q:\n%s", want, body)
			}
		}
		if req.Messages[0].Content != judge.ConversationSystemPrompt || strings.Contains(body, "<task>") {
			t.Errorf("system %q; body %s", req.Messages[0].Content, body)
		}
	})
	t.Run("a later turn", func(t *testing.T) {
		m := &fakeModel{replies: []string{"Score: 1"}}
		test := harness.Test{ID: "m", Prompt: "Order 42.", Expected: harness.Expected{Answer: "refunded", Type: judge.ExpectedType}}
		if _, err := judge.New(judge.Options{Client: m}).Evaluate(context.Background(), &harness.EvalRequest{
			Test: test, Evaluator: cfg(), Response: "Refunded.", Messages: conv}); err != nil {
			t.Fatal(err)
		}
		body := m.requests()[0].Messages[1].Content
		for _, want := range []string{"<conversation>\nUser: I want a refund.\n\nAssistant: Which order?\n</conversation>", "<task>\nOrder 42.\n</task>"} {
			if !strings.Contains(body, want) {
				t.Errorf("the judge's request lacks %q:\n%s", want, body)
			}
		}
	})
	t.Run("one prompt: as before", func(t *testing.T) {
		m := &fakeModel{replies: []string{"Score: 1"}}
		if _, err := judge.New(judge.Options{Client: m}).Evaluate(context.Background(), &harness.EvalRequest{
			Test: harness.Test{ID: "p", Prompt: "I want a refund."}, Evaluator: cfg(), Response: "Which order?", Messages: conv[:3]}); err != nil {
			t.Fatal(err)
		}
		req := m.requests()[0]
		if req.Messages[0].Content != judge.SystemPrompt || strings.Contains(req.Messages[1].Content, "<conversation>") {
			t.Errorf("one prompt's judge request changed: %+v", req.Messages)
		}
	})
}
