package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

// The conformance kits pass for the host's shims of real plugins: what a
// plugin author checks in-process holds through the boundary too.
func TestConformanceThroughHost(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	install(t, dir, "channel", "gauntlet-channel-testchan")
	install(t, dir, "tool", "gauntlet-tool-echo")
	_, reg := newManager(t, Options{Dir: dir})

	t.Run("evaluator", func(t *testing.T) {
		ev, _ := reg.Evaluator("testeval")
		judge := evalRequest("judge", "42")
		judge.Client = &fakeModel{answer: "0.75"}
		harnesstest.TestEvaluator(t, ev,
			harnesstest.EvalCase{Name: "right", Request: evalRequest("42", "42"), Want: &harnesstest.Verdict{Score: 1, Passed: true}},
			harnesstest.EvalCase{Name: "wrong", Request: evalRequest("41", "42"), Want: &harnesstest.Verdict{}},
			harnesstest.EvalCase{Name: "judge", Request: judge, Want: &harnesstest.Verdict{Score: 0.75, Passed: true}},
		)
	})
	t.Run("evaluator/generic", func(t *testing.T) {
		ev, _ := reg.Evaluator("testeval")
		harnesstest.TestEvaluator(t, ev)
	})
	t.Run("channel", func(t *testing.T) {
		ch, _ := reg.Channel("testchan")
		send := func(ctx context.Context, run *harness.ChannelRun) error {
			_, err := ch.(harness.Receiver).Receive(ctx, run, &harness.InboundRequest{Body: []byte(`{"user":"1","text":"hi"}`)})
			return err
		}
		harnesstest.TestChannel(t, ch,
			harnesstest.ChannelCase{Name: "greets", Config: map[string]any{"greeting": "hello"}},
			harnesstest.ChannelCase{Name: "relays", Config: map[string]any{}, Send: send},
		)
	})
	t.Run("tool", func(t *testing.T) {
		tl, _ := reg.Tool("echo")
		harnesstest.TestTool(t, tl,
			harnesstest.ToolCase{Name: "echo", Arguments: `{"text":"hi"}`},
			harnesstest.ToolCase{Name: "no text", Arguments: `{}`, WantErr: true},
		)
		var def harness.FunctionDef
		if b, _ := json.Marshal(tl.Definition()); json.Unmarshal(b, &def) != nil || def.Description == "" {
			t.Errorf("definition %+v", def)
		}
	})
}
