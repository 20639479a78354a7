package server_test

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// walkResult is scaleResult with, for the results that mention "zebra",
// the conversation of a tool call and a second pass (three model calls,
// each with its own timing and tokens), and a score between 0.5 and 1
// when they passed, so that sorting them by score means something.
func walkResult(id string, i int) runs.Result {
	r := scaleResult(id, i)
	if i%15 != 0 {
		return r
	}
	if r.Status == runs.TestPassed {
		r.Score = float64(50+(i*7)%51) / 100
	}
	call := harness.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`}
	r.Transcript = []runs.Message{
		{Message: harness.Message{Role: "system", Content: "Be brief."}},
		{Message: harness.Message{Role: "user", Content: r.Prompt}},
		{Message: harness.Message{Role: "assistant", ToolCalls: []harness.ToolCall{call}}},
		{Message: harness.Message{Role: "tool", ToolCallID: call.ID, Content: `{"temp_c":21.5}`}},
		{Message: harness.Message{Role: "assistant", Content: "It is mild."}},
		{Message: harness.Message{Role: "user", Content: "State your final answer only."}, Pass2: true},
		{Message: harness.Message{Role: "assistant", Content: r.Response}, Pass2: true},
	}
	r.Calls = []runs.Call{
		{Purpose: runs.CallTest, Attempt: 1, StartMS: 0, DurationMS: 412, PromptTokens: 1200, CompletionTokens: 35, Status: "ok"},
		{Purpose: runs.CallToolRound, Round: 1, Attempt: 1, StartMS: 420, DurationMS: 1250, PromptTokens: 1290, CompletionTokens: 8, Status: "ok"},
		{Purpose: runs.CallPass2, Attempt: 1, StartMS: 1700, DurationMS: 87, PromptTokens: 1310, CompletionTokens: 4, Status: "ok"},
	}
	r.Details["pass2_used"] = true
	return r
}

// TestBrowserExplorerWalk walks the results explorer as a user does, in
// one go: a cell of 1,000 results opened from its run's page, filtered to
// the errors, searched for a word, widened to every status and sorted by
// score, paged forward and back; a result opened with its transcript (a
// tool call and a second pass, each model call's timing and tokens);
// the CSV export saved by the browser and read back (its header row and
// the rows the filters select, in the order shown); then an agent's
// conversations (the users, their last message, one transcript). What
// each step shows is checked against the API.
func TestBrowserExplorerWalk(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	all := make([]runs.Result, 1000)
	for i := range all {
		all[i] = walkResult("walk", i)
	}
	seedRun(t, e, "walk", all)
	e.createAgent("bot", "Be brief.")
	e.chat("bot", "alice", "Hello there.")
	e.chat("bot", "bob", "What is 2 + 2?")

	// What the API says the last steps should show: the results that
	// mention zebra, every status, by score descending.
	var want struct {
		Results []struct {
			TestID string  `json:"test_id"`
			Score  float64 `json:"score"`
			Status string  `json:"status"`
		} `json:"results"`
		Total int `json:"total"`
	}
	must(t, e.get("/api/run/walk/results?domain=scale&level=1&q=zebra&sort=-score&limit=1000"), http.StatusOK).decode(t, &want)
	if want.Total != 67 || len(want.Results) != 67 {
		t.Fatalf("the API selects %d results mentioning zebra, want 67", want.Total)
	}
	wantIDs := make([]string, len(want.Results))
	for i, r := range want.Results {
		wantIDs[i] = r.TestID
	}

	b := newBrowser(t, e.url, 1280, 900)
	d := b.allowDownloads()
	const dlg = "#cell-dialog[open]"
	const rows = dlg + " tr.result-row"
	shown := func() []string {
		return evalJS[[]string](b, `[...document.querySelectorAll('`+rows+`')].map(r => r.dataset.test)`)
	}
	waitCount := func(what, prefix, suffix string) {
		t.Helper()
		b.wait(what, fmt.Sprintf(`(() => { const c = document.querySelector('%s .ex-count'); return c !== null && c.textContent.startsWith(%q) && c.textContent.endsWith(%q); })()`, dlg, prefix, suffix))
	}
	setSelect := func(sel, v string) {
		t.Helper()
		evalJS[chromedp.Void](b, fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q; s.dispatchEvent(new Event('change')); })()`, sel, v))
	}

	// 1. The cell, from its run's page: one page of 50.
	b.open("#/run/walk")
	cell := `main > .view:not([hidden]) .cell[data-domain="scale"][data-level="1"]`
	b.wait("the cell in the run's matrix", `document.querySelector('`+cell+`') !== null`)
	b.click(cell)
	waitCount("the cell's first page", "1,000 results", "1–50 shown")
	if n := len(shown()); n != 50 {
		t.Fatalf("step 1, the cell: %d rows shown, want a page of 50 of the 1,000", n)
	}

	// 2. Errors only.
	setSelect(dlg+" .ex-status", "error")
	waitCount("the errors", "100 of 1,000 results", "1–50 shown")
	if got := evalJS[[]string](b, `[...new Set([...document.querySelectorAll('`+rows+`')].map(r => r.dataset.status))]`); !slices.Equal(got, []string{"error"}) {
		t.Fatalf("step 2, errors only: the rows' statuses are %v, want error alone", got)
	}

	// 3. A word searched, among the errors.
	b.typeInto(dlg+" .ex-search", "zebra")
	waitCount("the errors that mention zebra", "34 of 1,000 results", "1–34 shown")
	if n := evalJS[int](b, `[...document.querySelectorAll('`+rows+`')].filter(r => r.dataset.status !== 'error' || !r.querySelector('td.preview').textContent.includes('zebra')).length`); n != 0 {
		t.Fatalf("step 3, search: %d rows shown are not errors mentioning zebra", n)
	}

	// 4. Every status, sorted by score, highest first.
	setSelect(dlg+" .ex-status", "")
	waitCount("every result that mentions zebra", "67 of 1,000 results", "1–50 shown")
	b.click(dlg + " th.col-score button")
	b.wait("the sort by score, descending", `document.querySelector('`+dlg+` th.col-score').getAttribute('aria-sort') === 'descending'`)
	b.wait("the rows by score", fmt.Sprintf(`document.querySelector('%s').dataset.test === %q`, rows, wantIDs[0]))
	if got := shown(); !slices.Equal(got, wantIDs[:50]) {
		t.Fatalf("step 4, sorted by score: the rows are\n%v\nwant the API's order\n%v", got, wantIDs[:50])
	}
	scores := evalJS[[]string](b, `[...document.querySelectorAll('`+rows+` td.score')].map(td => td.textContent)`)
	if scores[0] == scores[len(scores)-1] {
		t.Errorf("step 4: every score shown is %s: the sort is not seen", scores[0])
	}

	// 5. Pages of 25: forward twice, back once.
	setSelect(dlg+" .ex-size", "25")
	waitCount("pages of 25", "67 of 1,000 results", "1–25 shown")
	pages := []struct {
		click, suffix string
		from, to      int
	}{
		{dlg + " .ex-next", "26–50 shown", 25, 50},
		{dlg + " .ex-next", "51–67 shown", 50, 67},
		{dlg + " .ex-prev", "26–50 shown", 25, 50},
	}
	if got := shown(); !slices.Equal(got, wantIDs[:25]) {
		t.Fatalf("step 5, page 1: rows %v, want %v", got, wantIDs[:25])
	}
	for _, p := range pages {
		before := shown()[0]
		b.click(p.click)
		waitCount(p.suffix, "67 of 1,000 results", p.suffix)
		got := shown()
		if !slices.Equal(got, wantIDs[p.from:p.to]) || got[0] == before {
			t.Fatalf("step 5, %s: rows %v (the page before began with %s), want %v", p.suffix, got, before, wantIDs[p.from:p.to])
		}
	}
	if evalJS[bool](b, `document.querySelector('`+dlg+` .ex-prev').disabled || document.querySelector('`+dlg+` .ex-next').disabled`) {
		t.Error("step 5: on page 2 of 3, previous or next is disabled")
	}

	// 6. The first result of page 2, its transcript: the tool call, the
	// second pass, and each model call's timing and tokens.
	test := wantIDs[25]
	row := fmt.Sprintf(`%s tr.result-row[data-test=%q]`, dlg, test)
	evalJS[chromedp.Void](b, `document.querySelector('`+row+`').scrollIntoView({block: 'center'})`)
	b.click(row + " .row-toggle")
	detail := row + " + tr.result-detail"
	b.wait("the result open", `document.querySelector('`+detail+` .test-body') !== null && !document.querySelector('`+detail+`').hidden`)
	summary := detail + " details.transcript-wrap > summary"
	if got := b.text(summary); got != "Transcript: 7 messages, 3 model calls" {
		t.Errorf("step 6, %s: the transcript's summary reads %q", test, got)
	}
	b.click(summary)
	tr := detail + " .transcript"
	b.wait("the transcript", `document.querySelectorAll('`+tr+` li.msg').length === 7`)
	roles := evalJS[[]string](b, `[...document.querySelectorAll('`+tr+` li.msg')].map(li => li.dataset.role + (li.classList.contains('pass2') ? '*' : ''))`)
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,assistant,user*,assistant*" {
		t.Errorf("step 6, %s: messages %s, want the tool call's round and the second pass marked *", test, got)
	}
	if got := b.text(tr + " li.msg-assistant .tool-call"); !strings.Contains(got, "get_weather") || !strings.Contains(got, `"city": "Paris"`) {
		t.Errorf("step 6, %s: the tool call shows %q, want get_weather and its arguments", test, got)
	}
	if got := b.text(tr + " li.msg-tool .msg-head"); !strings.Contains(got, "get_weather") {
		t.Errorf("step 6, %s: the tool result's head %q does not name its function", test, got)
	}
	if got := b.text(tr + " li.pass2-start"); !strings.Contains(got, "Second pass") {
		t.Errorf("step 6, %s: the second pass is announced as %q", test, got)
	}
	if n := evalJS[int](b, `document.querySelectorAll('`+tr+` li.msg.pass2 .tag-pass2').length`); n != 2 {
		t.Errorf("step 6, %s: %d messages tagged second pass, want 2", test, n)
	}
	calls := evalJS[[]string](b, `[...document.querySelectorAll('`+tr+` table.calls tbody tr')].map(r => [...r.cells].map(c => c.textContent.trim()).filter(s => s !== '').join(' | '))`)
	wantCalls := []string{
		"Test | 1 | 412 ms | 1,200 + 35 | ✓ ok",
		"Tool round 1 | 1 | 1.3 s | 1,290 + 8 | ✓ ok",
		"Second pass | 1 | 87 ms | 1,310 + 4 | ✓ ok",
	}
	if !slices.Equal(calls, wantCalls) {
		t.Errorf("step 6, %s: the model calls read\n%s\nwant\n%s", test, strings.Join(calls, "\n"), strings.Join(wantCalls, "\n"))
	}

	// 7. Export CSV: the file the browser saves holds the header row and
	// the 67 rows selected, in the order shown.
	b.click(dlg + " .ex-export-csv")
	file := d.nth(1)
	if file.state != cdpbrowser.DownloadProgressStateCompleted || file.name != "walk.csv" {
		t.Fatalf("step 7, export: the download ended %s as %q, want completed as walk.csv", file.state, file.name)
	}
	records, err := csv.NewReader(strings.NewReader(string(file.body))).ReadAll()
	if err != nil {
		t.Fatalf("step 7, export: the file saved is not CSV: %v\n%.300s", err, file.body)
	}
	if len(records) == 0 || !slices.Equal(records[0][:9], []string{"run_id", "test_id", "repeat", "domain", "level", "name", "status", "score", "duration_ms"}) {
		t.Fatalf("step 7, export: the header row is %v", records[:min(1, len(records))])
	}
	col := func(name string) int { return slices.Index(records[0], name) }
	var ids []string
	var stray [][]string
	for _, rec := range records[1:] {
		ids = append(ids, rec[col("test_id")])
		if !strings.Contains(rec[col("response")], "zebra") || rec[col("run_id")] != "walk" {
			stray = append(stray, rec)
		}
	}
	if len(stray) > 0 {
		t.Fatalf("step 7, export: %d of the %d rows saved are not selected by the filters, the first %v", len(stray), len(records)-1, stray[0])
	}
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("step 7, export: %d rows, test ids\n%v\nwant the 67 shown, in order\n%v", len(ids), ids, wantIDs)
	}

	// 8. The agent's conversations: its users, their last message, the
	// transcript of one.
	b.click("#cell-dialog [data-close]")
	b.wait("the dialog to close", `!document.getElementById('cell-dialog').open`)
	var convs struct {
		Conversations []struct {
			UserID      string `json:"user_id"`
			Messages    int    `json:"messages"`
			LastMessage string `json:"last_message"`
		} `json:"conversations"`
	}
	must(t, e.get("/api/agents/bot/conversations"), http.StatusOK).decode(t, &convs)
	var wantConvs []string
	for _, c := range convs.Conversations {
		wantConvs = append(wantConvs, fmt.Sprintf("%s | %d | Agent: %s", c.UserID, c.Messages, c.LastMessage))
	}
	if len(wantConvs) != 2 {
		t.Fatalf("step 8: the API lists %d conversations, want alice's and bob's", len(wantConvs))
	}
	b.route("#/agents/bot")
	const convRows = `[...document.querySelectorAll('#conversations tr[data-user]')]`
	b.wait("the conversations", convRows+`.length === 2`)
	got := evalJS[[]string](b, convRows+`.map(r => [r.dataset.user, r.cells[1].textContent, r.querySelector('.conv-last').textContent].join(' | '))`)
	if !slices.Equal(got, wantConvs) {
		t.Errorf("step 8: the conversations read\n%s\nwant, most recent first\n%s", strings.Join(got, "\n"), strings.Join(wantConvs, "\n"))
	}
	b.click(`#conversations tr[data-user="alice"] button`)
	const msgs = `[...document.querySelectorAll('#conv-transcript .msg')]`
	b.wait("alice's transcript", msgs+`.length === 2`)
	if got := evalJS[[]string](b, msgs+`.map(m => m.dataset.role + ': ' + (m.querySelector('.msg-text') || {}).textContent)`); len(got) != 2 || got[0] != "user: Hello there." || !strings.HasPrefix(got[1], "assistant: ") || got[1] == "assistant: " {
		t.Errorf("step 8: alice's transcript reads %q, want her message, then the agent's answer", got)
	}
}
