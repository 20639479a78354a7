package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestProvenanceHidesCredentials: a base URL with a user, a password and
// an API key in its query is recorded in the run's config without them.
func TestProvenanceHidesCredentials(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 1, 0)
	f := &fixture{dir: t.TempDir(), events: make(chan engine.Event, 1000)}
	f.db, f.cat, f.runs = openStores(t, f.dir, "", d.snap())
	f.mock = llmtest.NewServer(llmtest.Options{})
	t.Cleanup(f.mock.Close)
	client, err := llm.New(llm.Options{BaseURL: f.mock.URL, Model: "test-model", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(f.mock.URL, "http://")
	base := "http://alice:hunter2@" + host + "/v1?api_key=sk-SECRET&deployment=prod"
	f.eng, err = engine.New(context.Background(), engine.Options{
		Definitions: f.cat, Runs: f.runs, Client: client, Model: "test-model", BaseURL: base,
		Version: "test", LogDir: t.TempDir(), OnEvent: func(ev engine.Event) { f.events <- ev },
	})
	if err != nil {
		t.Fatal(err)
	}
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	want := "http://" + host + "/v1?api_key=********&deployment=prod"
	if info.Config == nil || info.Config.BaseURL != want {
		t.Fatalf("config = %+v, want base_url %q", info.Config, want)
	}
	stored, err := f.runs.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Config == nil || stored.Config.BaseURL != want {
		t.Errorf("stored config = %+v", stored.Config)
	}
}
