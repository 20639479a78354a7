package server_test

// The dashboard's Plugins view in a real headless Chromium (see
// browser_test.go): the server's own plugin processes, a crash and the
// restart after it, a checksum mismatch, and a server without plugins.

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
)

// pluginRow is the text of the Plugins view's row of a plugin.
func (b *browser) pluginRow(name, cls string) string {
	b.t.Helper()
	return b.text(`#view-plugins tr[data-plugin="` + name + `"] .` + cls)
}

func TestBrowserPlugins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	buildTestPlugin(t, "evaluator", dir, "gauntlet-evaluator-testeval")
	buildTestPlugin(t, "evaluator", dir, "gauntlet-evaluator-pinned")
	buildTestPlugin(t, "channel", dir, "gauntlet-channel-declared")
	e := newPluginEnv(t, host.Options{Dir: dir, RestartBackoff: 20 * time.Millisecond,
		Checksums: map[string]string{"gauntlet-evaluator-pinned": strings.Repeat("0", 64)}})
	ev, _ := e.reg.Evaluator("testeval")
	req := &harness.EvalRequest{Test: harness.Test{ID: "t", Expected: harness.Expected{Answer: "42"}}, Response: "42"}
	if _, err := ev.Evaluate(t.Context(), req); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/plugins")
	b.wait("three plugins", `document.querySelectorAll('#view-plugins tr[data-plugin]').length === 3`)
	if !evalJS[bool](b, `document.querySelector('[data-nav="plugins"]').getAttribute('aria-current') === 'page'`) {
		t.Error("the Plugins link is not marked as the current page")
	}
	if got := b.text("#view-plugins"); !strings.Contains(got, dir) {
		t.Errorf("the view does not name the directory %s:\n%s", dir, got)
	}
	if got := b.pluginRow("gauntlet-evaluator-testeval", "plugin-state"); !strings.Contains(got, "running") || !strings.Contains(got, "pid ") {
		t.Errorf("testeval state %q", got)
	}
	if got := b.pluginRow("gauntlet-evaluator-testeval", "plugin-version"); got != "1.2.3" {
		t.Errorf("testeval version %q", got)
	}
	if got := b.pluginRow("gauntlet-channel-declared", "plugin-state"); !strings.Contains(got, "stopped") {
		t.Errorf("unused channel state %q", got)
	}
	if got := b.pluginRow("gauntlet-evaluator-pinned", "plugin-checksum"); !strings.Contains(got, "✗") || !strings.Contains(got, "mismatch") {
		t.Errorf("pinned checksum %q", got)
	}
	if got := b.pluginRow("gauntlet-evaluator-testeval", "plugin-checksum"); !strings.Contains(got, "unpinned") {
		t.Errorf("unpinned checksum %q", got)
	}

	// Killed and used again: the view shows the restart and why, on its
	// own (it refreshes while shown).
	pid := 0
	for _, s := range e.plugins.List() {
		if s.Name == "gauntlet-evaluator-testeval" {
			pid = s.PID
		}
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	harnesstest.Eventually(t, 10*time.Second, "the kill to be noticed", func() bool {
		for _, s := range e.plugins.List() {
			if s.Name == "gauntlet-evaluator-testeval" {
				return s.Health == host.HealthCrashed
			}
		}
		return false
	})
	if _, err := ev.Evaluate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	b.wait("the restart", `(() => { const r = document.querySelector('#view-plugins tr[data-plugin="gauntlet-evaluator-testeval"]');
		return r && r.dataset.state === 'running' && r.querySelector('.plugin-restarts').textContent === '1'; })()`)
	if got := b.pluginRow("gauntlet-evaluator-testeval", "plugin-error"); !strings.Contains(got, "killed") {
		t.Errorf("last error %q, want the kill", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll('#view-plugins tr[data-plugin="gauntlet-evaluator-testeval"] .plugin-error time').length`); n != 1 {
		t.Errorf("the last error shows %d times, want its time once", n)
	}

	// The refresh button reads the list again at once.
	pinned, ok := e.reg.Evaluator("pinned")
	if !ok {
		t.Fatal("pinned not registered")
	}
	if _, err := pinned.Evaluate(t.Context(), req); err == nil {
		t.Fatal("a plugin with a wrong checksum answered")
	}
	b.click("#plugins-refresh")
	b.wait("the refused start", `document.querySelector('#view-plugins tr[data-plugin="gauntlet-evaluator-pinned"]').dataset.state === 'crashed'`)
	if got := b.pluginRow("gauntlet-evaluator-pinned", "plugin-error"); !strings.Contains(got, "checksum mismatch") {
		t.Errorf("pinned last error %q", got)
	}

	// Leaving the view stops its refreshing; coming back reads again.
	b.route("#/live")
	b.route("#/plugins")
	b.wait("the list again", `document.querySelectorAll('#view-plugins tr[data-plugin]').length === 3`)
}

// A server without plugins says where it looked and how plugins are named.
func TestBrowserNoPlugins(t *testing.T) {
	t.Parallel()
	missing := t.TempDir() + "/none"
	e := newPluginEnv(t, host.Options{Dir: missing})
	b := newBrowser(t, e.url, 390, 844)
	b.open("#/plugins")
	b.wait("the empty list", `document.getElementById('plugins-empty') !== null`)
	if got := b.text("#plugins-empty"); !strings.Contains(got, "No plugins in "+missing) || !strings.Contains(got, "gauntlet-evaluator-<type>") {
		t.Errorf("empty view %q", got)
	}
}
