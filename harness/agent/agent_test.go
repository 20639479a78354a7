package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// The catalog is the ToolSource the server gives the service.
var _ agent.ToolSource = (*catalog.Catalog)(nil)

var timestampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)

func TestAgentCRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx
	a, err := e.svc.Create(ctx, harness.Agent{ID: "support", Name: "Support", Description: "Helps", SystemPrompt: "Be kind."})
	if err != nil {
		t.Fatal(err)
	}
	if !timestampRE.MatchString(a.CreatedAt) {
		t.Errorf("created_at = %q, want YYYY-MM-DD HH:MM:SS", a.CreatedAt)
	}
	if a.Model != nil {
		t.Errorf("model = %v, want nil", *a.Model)
	}
	b, err := e.svc.Create(ctx, harness.Agent{ID: "b2", Model: new(string)})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "b2" || b.Model != nil {
		t.Errorf("defaults: name %q model %v, want the id and nil", b.Name, b.Model)
	}

	list, err := e.svc.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	d, err := e.svc.Get(ctx, "support")
	if err != nil {
		t.Fatal(err)
	}
	if d.Agent != a || d.Tools == nil || len(d.Tools) != 0 || d.Channels == nil || len(d.Channels) != 0 {
		t.Errorf("Get = %+v, want the agent with empty tools and channels", d)
	}

	model := "bigger-model"
	u, err := e.svc.Update(ctx, "support", func(x *harness.Agent) error {
		x.Name, x.Model, x.CreatedAt = "Support desk", &model, "1999-01-01 00:00:00"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "Support desk" || u.Model == nil || *u.Model != model || u.CreatedAt != a.CreatedAt || u.SystemPrompt != "Be kind." {
		t.Errorf("Update = %+v", u)
	}
	u, err = e.svc.Update(ctx, "support", func(x *harness.Agent) error { x.Model = nil; return nil })
	if err != nil || u.Model != nil {
		t.Errorf("clearing the model: %+v, %v", u, err)
	}
	_, err = e.svc.Update(ctx, "support", func(x *harness.Agent) error { x.ID = "other"; return nil })
	wantInvalid(t, err, "id")
	applyErr := errors.New("refused")
	if _, err := e.svc.Update(ctx, "support", func(*harness.Agent) error { return applyErr }); !errors.Is(err, applyErr) {
		t.Errorf("apply error = %v", err)
	}
	if _, err := e.svc.Update(ctx, "nobody", func(*harness.Agent) error { return nil }); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("update unknown = %v", err)
	}

	if err := e.svc.Delete(ctx, "support"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Get(ctx, "support"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("Get after delete = %v", err)
	}
	if err := e.svc.Delete(ctx, "support"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("Delete twice = %v", err)
	}
}

func TestAgentCreateValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name, id string
		ok       bool
	}{
		{"empty", "", false},
		{"dash", "bad-id", false},
		{"space", "a b", false},
		{"dot", "a.b", false},
		{"slash", "../x", false},
		{"unicode", "agént", false},
		{"too long", strings.Repeat("a", 129), false},
		{"longest", strings.Repeat("a", 128), true},
		{"underscore and digits", "Agent_007", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Create(e.ctx, harness.Agent{ID: tc.id})
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantInvalid(t, err, "id")
		})
	}
	t.Run("duplicate", func(t *testing.T) {
		if _, err := e.svc.Create(e.ctx, harness.Agent{ID: "Agent_007"}); !errors.Is(err, harness.ErrConflict) {
			t.Fatalf("duplicate = %v, want ErrConflict", err)
		}
	})
}

func TestAgentTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tools.put(weatherTool)
	e.tools.put(lookupTool)
	e.createAgent("a", "")
	e.createAgent("b", "")
	ctx := e.ctx

	got, err := e.svc.SetTools(ctx, "a", []string{"weather", "lookup"})
	if err != nil || !reflect.DeepEqual(got, []string{"weather", "lookup"}) {
		t.Fatalf("SetTools = %v, %v", got, err)
	}
	if _, err := e.svc.SetTools(ctx, "b", []string{"lookup"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		ids   []string
		field string
	}{
		{"unknown", []string{"weather", "nope"}, "tools[1]"},
		{"duplicate", []string{"lookup", "lookup"}, "tools[1]"},
		{"bad id", []string{"../etc"}, "tools[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.SetTools(ctx, "a", tc.ids)
			wantInvalid(t, err, tc.field)
			ids, err := e.svc.Tools(ctx, "a")
			if err != nil || !reflect.DeepEqual(ids, []string{"weather", "lookup"}) {
				t.Fatalf("after a refused SetTools: %v, %v; want the list unchanged", ids, err)
			}
		})
	}
	users, err := e.svc.ToolUsers(ctx, "lookup")
	if err != nil || !reflect.DeepEqual(users, []string{"a", "b"}) {
		t.Errorf("ToolUsers = %v, %v", users, err)
	}
	d, _ := e.svc.Get(ctx, "a")
	if !reflect.DeepEqual(d.Tools, []string{"weather", "lookup"}) {
		t.Errorf("Get tools = %v", d.Tools)
	}
	if got, err := e.svc.SetTools(ctx, "a", nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("SetTools(nil) = %#v, %v; want an empty list", got, err)
	}
	if _, err := e.svc.Tools(ctx, "nobody"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("Tools of unknown agent = %v", err)
	}
	if _, err := e.svc.SetTools(ctx, "nobody", nil); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("SetTools of unknown agent = %v", err)
	}
	if err := e.svc.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if users, _ := e.svc.ToolUsers(ctx, "lookup"); len(users) != 0 {
		t.Errorf("ToolUsers after deleting the agent = %v", users)
	}
}

func TestToolList(t *testing.T) {
	t.Parallel()
	l := agent.ToolList{weatherTool}
	if got, err := l.Tool(t.Context(), "weather"); err != nil || got.ID != "weather" {
		t.Errorf("Tool(weather) = %v, %v", got, err)
	}
	if _, err := l.Tool(t.Context(), "x"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("Tool(x) = %v", err)
	}
}

func TestDeleteAgentRemovesEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fake := registerFake(t, e)
	e.tools.put(weatherTool)
	e.createAgent("gone", "")
	e.createAgent("kept", "")
	ctx := e.ctx
	e.writeKB("gone", "notes.md", "gone notes")
	e.writeKB("kept", "notes.md", "kept notes")
	if _, err := e.svc.SetTools(ctx, "gone", []string{"weather"}); err != nil {
		t.Fatal(err)
	}
	e.chat("gone", "u1", "hello")
	e.chat("kept", "u1", "hello")
	ch, err := e.svc.Supervisor().Create(ctx, "gone", harness.ChannelConfig{Type: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Supervisor().Start(ctx, "gone", ch.ID); err != nil {
		t.Fatal(err)
	}
	fake.waitRuns(t, 1)

	if err := e.svc.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if fake.running() != 0 {
		t.Error("the agent's channel still runs")
	}
	if _, err := os.Stat(filepath.Join(e.opts.DataDir, "kb", "gone")); !os.IsNotExist(err) {
		t.Errorf("knowledge base directory: %v, want it gone", err)
	}
	if _, err := e.svc.Supervisor().Inbound(ctx, ch.ID, &harness.InboundRequest{}); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("channel after delete: %v", err)
	}
	// A new agent with the same id starts afresh.
	e.createAgent("gone", "")
	if h, _ := e.svc.History(ctx, "gone", "u1"); len(h) != 0 {
		t.Errorf("history of the new agent = %v", h)
	}
	if ids, _ := e.svc.Tools(ctx, "gone"); len(ids) != 0 {
		t.Errorf("tools of the new agent = %v", ids)
	}
	if files, _ := e.svc.KB().List(ctx, "gone"); len(files) != 0 {
		t.Errorf("kb of the new agent = %v", files)
	}
	// The other agent keeps its things.
	if h, _ := e.svc.History(ctx, "kept", "u1"); len(h) != 2 {
		t.Errorf("history of the other agent = %v", h)
	}
	if files, _ := e.svc.KB().List(ctx, "kept"); len(files) != 1 {
		t.Errorf("kb of the other agent = %v", files)
	}
}
