package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/agent/internal/kbtext"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
)

// The knowledge-base files and retrieval have their own packages and tests
// (harness/agent/kb, harness/agent/retrieval); these check how the
// Service composes them.

// TestKBUnknownAgent: the knowledge base of an agent that does not exist
// is refused, through the Service and through its store alike, and no
// directory is made for it.
func TestKBUnknownAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx
	for name, err := range map[string]error{
		"list": func() error { _, err := e.svc.KB().List(ctx, "nobody"); return err }(),
		"read": func() error { _, err := e.svc.KB().Read(ctx, "nobody", "x.md"); return err }(),
		"write": func() error {
			_, err := e.svc.KB().Write(ctx, "nobody", "x.md", strings.NewReader("x"), true)
			return err
		}(),
		"delete": e.svc.KB().Delete(ctx, "nobody", "x.md"),
		"store write": func() error {
			_, err := e.svc.KB().Write(ctx, "nobody", "x.md", strings.NewReader("x"), true)
			return err
		}(),
		"retrieve": func() error { _, err := e.svc.Retrieve(ctx, "nobody", "x"); return err }(),
	} {
		if !errors.Is(err, harness.ErrNotFound) {
			t.Errorf("%s for an unknown agent = %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(e.opts.DataDir, "kb", "nobody")); !os.IsNotExist(err) {
		t.Errorf("a directory was made for an unknown agent: %v", err)
	}
	e.createAgent("a", "")
	if _, err := e.svc.KB().Write(ctx, "a", "bin", strings.NewReader("\x00"), true); !errors.Is(err, kb.ErrUnsupported) {
		t.Errorf("binary through the Service = %v, want kb.ErrUnsupported", err)
	}
}

func TestChatGetsWholeKB(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createAgent("a", "You answer from the notes.")
	e.writeKB("a", "b.md", "Opening hours: 9 to 5.")
	e.writeKB("a", "a.txt", "The office is in Lyon.")
	e.chat("a", "u", "unrelated question")
	want := "You answer from the notes.\n\nKnowledge base:\n\n### a.txt\n\nThe office is in Lyon.\n\n### b.md\n\nOpening hours: 9 to 5."
	if sys := systemOf(e.lastRequest()); sys != want {
		t.Errorf("system message = %q, want %q", sys, want)
	}
}

func TestChatGetsBestChunks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOptions(func(o *agent.Options) { o.KBBudgetTokens = 1000 }))
	e.createAgent("a", "Answer from the knowledge base.")
	filler := kbtext.Filler(1<<20, 1)
	mid := strings.Index(filler[len(filler)/2:], "\n\n") + len(filler)/2 + 2
	e.writeKB("a", "handbook.md", filler[:mid]+kbtext.Fact+"\n\n"+filler[mid:])

	e.chat("a", "u", "What is the launch code of Project Zephyrine?")
	sys := systemOf(e.lastRequest())
	if !strings.Contains(sys, kbtext.Fact) {
		t.Fatalf("the system message (%d bytes) lacks the paragraph with the fact", len(sys))
	}
	if !strings.HasPrefix(sys, "Answer from the knowledge base.\n\nKnowledge base excerpts") {
		t.Errorf("the system prompt does not come first: %.100q", sys)
	}
	if budget := 1000 * 4; len(sys) > budget+200 {
		t.Errorf("system message is %d bytes, over the budget of about %d", len(sys), budget)
	}
	got, err := e.svc.Retrieve(e.ctx, "a", "What is the launch code of Project Zephyrine?")
	if err != nil || !strings.Contains(sys, got) {
		t.Errorf("Retrieve = %.200q, %v: want the system message's knowledge part", got, err)
	}
	// A write through the Service is seen by the next chat.
	e.writeKB("a", "handbook.md", "The launch code of Project Zephyrine is now 1234-BETA.")
	e.chat("a", "u", "And now?")
	if sys := systemOf(e.lastRequest()); !strings.Contains(sys, "1234-BETA") || strings.Contains(sys, "7741") {
		t.Errorf("after a write, system message = %.300q", sys)
	}
}

func TestKBWithoutDataDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOptions(func(o *agent.Options) { o.DataDir = "" }))
	e.createAgent("a", "Be brief.")
	if _, err := e.svc.KB().Write(e.ctx, "a", "x.md", strings.NewReader("x"), true); err == nil {
		t.Error("KB().Write without a data directory succeeded")
	}
	if files, err := e.svc.KB().List(e.ctx, "a"); err != nil || len(files) != 0 {
		t.Errorf("KB().List = %v, %v", files, err)
	}
	e.chat("a", "u", "hi")
	if systemOf(e.lastRequest()) != "Be brief." {
		t.Errorf("system message = %q", systemOf(e.lastRequest()))
	}
}
