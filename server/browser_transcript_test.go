package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestBrowserTranscript runs the transcript tour and opens its cell: the
// result of tour-tools shows its conversation (system prompt collapsed,
// the tool call with its arguments pretty-printed, the tool's result, the
// answer as text, the second pass marked) and a call per request; the
// result of tour-retry shows the attempt the endpoint refused with 429,
// then the retry that got the answer.
func TestBrowserTranscript(t *testing.T) {
	t.Parallel()
	m := &tourModel{}
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Respond: m.respond}, files: tourFiles})
	id := e.runToEnd(map[string]any{"domains": []string{"tour"}})

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/run/" + id)
	cell := `main > .view:not([hidden]) .cell[data-domain="tour"][data-level="1"]`
	b.wait("the tour cell", `document.querySelector('`+cell+`') !== null`)
	b.click(cell)
	b.wait("the tests", `document.querySelectorAll('#cell-dialog[open] tr.result-row').length === 3`)

	// openTranscript opens a result and its transcript, as a user would.
	openTranscript := func(test string) string {
		t.Helper()
		row := fmt.Sprintf(`#cell-dialog tr.result-row[data-test=%q]`, test)
		res := row + " + tr.result-detail"
		if evalJS[bool](b, `document.querySelector('`+res+`').hidden`) {
			b.click(row + " .row-toggle")
		}
		b.click(res + " details.transcript-wrap > summary")
		tr := res + " .transcript"
		b.wait(test+"'s transcript", `document.querySelector('`+tr+`') !== null && document.querySelector('`+tr+`').offsetParent !== null`)
		return tr
	}

	tr := openTranscript("tour-tools")
	roles := evalJS[[]string](b, `[...document.querySelectorAll('`+tr+` li.msg')].map(li => li.dataset.role + (li.classList.contains('pass2') ? '*' : ''))`)
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,assistant,user*,assistant*" {
		t.Fatalf("tour-tools messages %s", got)
	}
	if evalJS[bool](b, `document.querySelector('`+tr+` li.msg-system details').open`) {
		t.Error("the system prompt is not collapsed")
	}
	call := b.text(tr + " li.msg-assistant .tool-call")
	if !strings.Contains(call, "get_weather") || !strings.Contains(call, `"city": "Paris",`) || !strings.Contains(call, "\n") {
		t.Errorf("tool call shows %q, want get_weather and its arguments pretty-printed", call)
	}
	if got := b.text(tr + " li.msg-tool .msg-head"); !strings.Contains(got, "get_weather") {
		t.Errorf("tool result head %q does not name its function", got)
	}
	answer := evalJS[string](b, `document.querySelectorAll('`+tr+` li.msg-assistant')[1].querySelector('.msg-content').textContent`)
	if answer != tourWarm || evalJS[bool](b, `document.getElementById('injected') !== null`) {
		t.Errorf("the answer reads %q, or its markup became elements", answer)
	}
	if got := b.text(tr + " li.pass2-start"); !strings.Contains(got, "Second pass") {
		t.Errorf("the second pass is not announced: %q", got)
	}
	if got := b.text(tr + " li.msg.pass2 .tag-pass2"); got != "second pass" {
		t.Errorf("pass-2 message tag %q", got)
	}
	purposes := evalJS[[]string](b, `[...document.querySelectorAll('`+tr+` table.calls tbody tr')].map(r => r.dataset.purpose + ' ' + r.dataset.status)`)
	if got := strings.Join(purposes, ","); got != "test ok,tool_round ok,pass2 ok" {
		t.Errorf("tour-tools calls %s", got)
	}

	tr = openTranscript("tour-retry")
	rows := evalJS[[]string](b, `[...document.querySelectorAll('`+tr+` table.calls tbody tr')].map(r => r.dataset.status + ' | ' + r.textContent)`)
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "http_error | ") || !strings.Contains(rows[0], "429") || !strings.Contains(rows[0], "slow down") ||
		!strings.HasPrefix(rows[1], "ok | ") {
		t.Fatalf("tour-retry calls %q, want the 429 then the answer", rows)
	}
	attempts := evalJS[[]string](b, `[...document.querySelectorAll('`+tr+` table.calls tbody tr td:nth-child(2)')].map(td => td.textContent)`)
	if strings.Join(attempts, ",") != "1,2" {
		t.Errorf("attempts %v, want 1 and 2", attempts)
	}
	if n := evalJS[int](b, `document.querySelectorAll('`+tr+` table.calls .bar').length`); n != 2 {
		t.Errorf("%d bars in the time line, want 2", n)
	}
}
