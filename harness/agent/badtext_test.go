package agent_test

import (
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// TestBadTextRefused: a NUL or invalid UTF-8 in an agent's fields, a chat
// message, a user id or a channel's name or config is harness.ErrInvalid
// naming the field, and nothing is stored.
func TestBadTextRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	registerFake(t, e)
	e.createAgent("a", "Be kind.")
	ctx := e.ctx
	ch, err := e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{ID: "ch", Type: "fake", Name: "Fake",
		Config: map[string]any{"bot_token": "t"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ name, text string }{{"NUL", "x\x00y"}, {"invalid UTF-8", "x\xc3(y"}} {
		t.Run(bad.name, func(t *testing.T) {
			_, err := e.svc.Create(ctx, harness.Agent{ID: "b", Name: bad.text})
			wantInvalid(t, err, "name")
			for _, tc := range []struct {
				field string
				apply func(*harness.Agent)
			}{
				{"name", func(a *harness.Agent) { a.Name = bad.text }},
				{"description", func(a *harness.Agent) { a.Description = bad.text }},
				{"system_prompt", func(a *harness.Agent) { a.SystemPrompt = bad.text }},
			} {
				_, err := e.svc.Update(ctx, "a", func(a *harness.Agent) error { tc.apply(a); return nil })
				wantInvalid(t, err, tc.field)
			}
			if d, err := e.svc.Get(ctx, "a"); err != nil || d.SystemPrompt != "Be kind." || d.Name != "Agent a" {
				t.Errorf("agent after refused updates: %+v, %v", d, err)
			}

			_, err = e.svc.Chat(ctx, "a", "u1", "hello "+bad.text)
			wantInvalid(t, err, "message")
			_, err = e.svc.Chat(ctx, "a", "u"+bad.text, "hello")
			wantInvalid(t, err, "user_id")
			if h, err := e.svc.History(ctx, "a", "u1"); err != nil || len(h) != 0 {
				t.Errorf("history after refused chats: %v, %v", h, err)
			}
			if n := len(e.requests()); n != 0 {
				t.Errorf("%d model requests for refused chats", n)
			}

			_, err = e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{Type: "fake", Config: map[string]any{"nested": map[string]any{"label": bad.text}}})
			wantInvalid(t, err, "config.nested.label")
			_, err = e.svc.Supervisor().Update(ctx, "a", ch.ID, func(c *harness.ChannelConfig) error { c.Name = bad.text; return nil })
			wantInvalid(t, err, "name")
			_, err = e.svc.Supervisor().Update(ctx, "a", ch.ID, func(c *harness.ChannelConfig) error {
				c.Config = map[string]any{"bot_token": bad.text}
				return nil
			})
			wantInvalid(t, err, "config.bot_token")
			if cfg := e.storedConfig(ch.ID); cfg["bot_token"] != "t" {
				t.Errorf("stored config %v", cfg)
			}
			if cs, _ := e.svc.Supervisor().List(ctx, "a"); len(cs) != 1 || cs[0].Name != "Fake" {
				t.Errorf("channels %+v", cs)
			}
		})
	}
}
