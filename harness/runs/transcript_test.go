package runs_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// msg makes a transcript message.
func msg(role, content string) runs.Message {
	return runs.Message{Message: harness.Message{Role: role, Content: content}}
}

// rebuilt is the transcript a result without a stored one reads with.
func rebuilt(system, prompt, response string) []runs.Message {
	var out []runs.Message
	if system != "" {
		out = append(out, msg(harness.RoleSystem, system))
	}
	return append(out, msg(harness.RoleUser, prompt), msg(harness.RoleAssistant, response))
}

// saveAndRead stores results in a new run and reads them back, with the
// raw transcript column of each.
func saveAndRead(t *testing.T, rs ...runs.Result) ([]runs.Result, []string) {
	t.Helper()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, newInfo("r1"), cells); err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		rs[i].RunID = "r1"
	}
	if err := s.SaveResults(ctx, rs); err != nil {
		t.Fatal(err)
	}
	got, err := s.Results(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := runs.RawTranscripts(ctx, db, "r1")
	if err != nil {
		t.Fatal(err)
	}
	return got, raw
}

func TestTranscriptRoundTrip(t *testing.T) {
	t.Parallel()
	bad := "bytes \x00 and \xff\xfe invalid"
	base := func(test string) runs.Result {
		r := result("r1", "math", 1, test, 1, runs.TestPassed)
		r.Calls = []runs.Call{}
		return r
	}
	toolCall := harness.ToolCall{ID: "call_9", Name: "get_weather", Arguments: `{"city":"Paris"}`}

	plain := base("plain")

	tools := base("tools")
	tools.Response = "It is 21 degrees."
	tools.Transcript = []runs.Message{
		msg(harness.RoleSystem, tools.SystemPrompt), msg(harness.RoleUser, tools.Prompt),
		{Message: harness.Message{Role: harness.RoleAssistant, Content: "Let me look.", ToolCalls: []harness.ToolCall{toolCall}}},
		{Message: harness.Message{Role: harness.RoleTool, Content: `{"temp":21}`, ToolCallID: "call_9"}},
		msg(harness.RoleAssistant, tools.Response),
	}
	tools.Calls = []runs.Call{
		{Purpose: runs.CallTest, Attempt: 1, DurationMS: 3, Status: harness.AttemptHTTPError, HTTPStatus: 429, Error: "rate limited"},
		{Purpose: runs.CallTest, Attempt: 2, StartMS: 10, DurationMS: 4, PromptTokens: 7, CompletionTokens: 2, Status: harness.AttemptOK},
		{Purpose: runs.CallToolRound, Round: 1, Attempt: 1, StartMS: 20, DurationMS: 5, PromptTokens: 9, CompletionTokens: 6, Status: harness.AttemptOK},
	}

	pass2 := base("pass2")
	pass2.SystemPrompt = ""
	pass2.Response = "I think about it."
	pass2.Details = map[string]any{"pass2_used": true, "pass2_response": "42"}
	pass2.Transcript = []runs.Message{
		msg(harness.RoleUser, pass2.Prompt), msg(harness.RoleAssistant, pass2.Response),
		{Message: harness.Message{Role: harness.RoleUser, Content: "State only your final answer."}, Pass2: true},
		{Message: harness.Message{Role: harness.RoleAssistant, Content: "42"}, Pass2: true},
	}

	odd := base("odd")
	odd.Response = bad
	odd.Transcript = []runs.Message{
		msg(harness.RoleSystem, odd.SystemPrompt), msg(harness.RoleUser, odd.Prompt),
		{Message: harness.Message{Role: harness.RoleAssistant, Content: "\xff call", ToolCalls: []harness.ToolCall{{ID: "c\x00", Name: "f", Arguments: "{\"a\":\"\xfe\"}"}}}},
		{Message: harness.Message{Role: harness.RoleTool, Content: "out \x00\xc3", ToolCallID: "c\x00"}},
		msg(harness.RoleAssistant, bad),
	}

	if p := pass2.Transcript[3]; p.Content != "42" {
		t.Fatal(p)
	}
	// A transcript that does not start with the columns' prompt is kept whole.
	agent := base("agent")
	agent.Transcript = []runs.Message{msg(harness.RoleSystem, "another system message"), msg(harness.RoleUser, agent.Prompt), msg(harness.RoleAssistant, agent.Response)}

	// An error in the middle of the tool loop: no final answer.
	failed := base("failed")
	failed.Status, failed.Response = runs.TestError, ""
	failed.Transcript = []runs.Message{msg(harness.RoleSystem, failed.SystemPrompt), msg(harness.RoleUser, failed.Prompt)}
	failed.Calls = []runs.Call{{Purpose: runs.CallTest, Attempt: 1, DurationMS: 100, Status: harness.AttemptTimeout, Error: "no response within 100ms (timeout)"}}

	// No transcript given: read as rebuilt from the columns.
	none := base("none")
	none.Transcript, none.Calls = nil, nil

	in := []runs.Result{plain, tools, pass2, odd, agent, failed, none}
	got, raw := saveAndRead(t, in...)
	want := append([]runs.Result(nil), in...)
	want[3].ResponseBase64 = "Ynl0ZXMgACBhbmQg//4gaW52YWxpZA=="
	want[6].Transcript, want[6].Calls = rebuilt(none.SystemPrompt, none.Prompt, none.Response), []runs.Call{}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s:\n got %+v\nwant %+v", want[i].TestID, got[i], want[i])
		}
	}

	// Compact: the prompt, system prompt and response are not stored again.
	for i, r := range in[:4] {
		if strings.Contains(raw[i], `"What?"`) || strings.Contains(raw[i], `"Be brief."`) || (r.Response != "" && strings.Contains(raw[i], r.Response)) {
			t.Errorf("%s: stored transcript repeats a column: %s", r.TestID, raw[i])
		}
	}
	if strings.Contains(raw[2], `"42"`) || !strings.Contains(raw[2], `"pass2_response":true`) {
		t.Errorf("pass2: the second pass's answer is stored twice: %s", raw[2])
	}
	if !strings.Contains(raw[4], "another system message") || !strings.Contains(raw[4], `"What?"`) {
		t.Errorf("agent: a transcript not starting with the columns' prompt lost it: %s", raw[4])
	}
	if raw[6] != "<null>" {
		t.Errorf("no transcript stored as %s, want NULL", raw[6])
	}
	for i, s := range raw {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			t.Errorf("%s: stored transcript is not plain UTF-8 text: %q", in[i].TestID, s)
		}
	}
}

func TestTranscriptCap(t *testing.T) {
	t.Parallel()
	r := result("r1", "math", 1, "big", 1, runs.TestPassed)
	r.Response = strings.Repeat("final ", 100_000)      // 600 kB: stored in its own column, not counted
	big := strings.Repeat("é", runs.TranscriptMaxBytes) // 2 × the cap, in 2-byte runes
	r.Transcript = []runs.Message{
		msg(harness.RoleSystem, r.SystemPrompt), msg(harness.RoleUser, r.Prompt),
		{Message: harness.Message{Role: harness.RoleAssistant, Content: big, ToolCalls: []harness.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":"` + big + `"}`}}}},
		{Message: harness.Message{Role: harness.RoleTool, Content: "short", ToolCallID: "a"}},
		msg(harness.RoleAssistant, r.Response),
	}
	// Many messages: some are left out, and the one after the gap says how many.
	many := result("r1", "math", 1, "many", 1, runs.TestPassed)
	many.Transcript = []runs.Message{msg(harness.RoleSystem, many.SystemPrompt), msg(harness.RoleUser, many.Prompt)}
	for i := range runs.TranscriptMaxMessages + 50 {
		many.Transcript = append(many.Transcript, msg(harness.RoleAssistant, "step "+string(rune('a'+i%26))))
	}
	many.Transcript = append(many.Transcript, msg(harness.RoleAssistant, many.Response))

	got, raw := saveAndRead(t, r, many)
	if len(raw[0]) > runs.TranscriptMaxBytes+4096 {
		t.Errorf("stored transcript is %d bytes, cap %d", len(raw[0]), runs.TranscriptMaxBytes)
	}
	tr := got[0].Transcript
	if len(tr) != 5 || tr[4].Content != r.Response || tr[4].Truncated || tr[3].Content != "short" || tr[3].Truncated {
		t.Fatalf("capped transcript lost its shape or its answer: %d messages", len(tr))
	}
	m := tr[2]
	if !m.Truncated || len(m.Content) >= len(big) || !utf8.ValidString(m.Content) || !strings.HasPrefix(big, m.Content) ||
		!strings.HasPrefix(m.ToolCalls[0].Arguments, `{"x":"`) || m.ToolCalls[0].Name != "f" {
		t.Errorf("long message: truncated %v, %d bytes, valid %v", m.Truncated, len(m.Content), utf8.ValidString(m.Content))
	}
	if n := len(m.Content) + len(m.ToolCalls[0].Arguments) + len("short"); n > runs.TranscriptMaxBytes {
		t.Errorf("texts kept: %d bytes, cap %d", n, runs.TranscriptMaxBytes)
	}

	tm := got[1].Transcript
	if len(tm) != 2+runs.TranscriptMaxMessages {
		t.Fatalf("many: %d messages read, want %d", len(tm), 2+runs.TranscriptMaxMessages)
	}
	omitted := 0
	for _, x := range tm {
		omitted += x.Omitted
	}
	if omitted != 51 || tm[len(tm)-1].Content != many.Response {
		t.Errorf("many: %d omitted (want 51), last %q", omitted, tm[len(tm)-1].Content)
	}
}

func TestCallsBounded(t *testing.T) {
	t.Parallel()
	r := result("r1", "math", 1, "calls", 1, runs.TestPassed)
	r.Calls = nil
	for i := range runs.MaxCalls + 10 {
		r.Calls = append(r.Calls, runs.Call{Purpose: runs.CallJudge, Attempt: i + 1, Status: harness.AttemptFailed,
			Error: strings.Repeat("x\x00", runs.CallErrorMaxBytes)})
	}
	got, _ := saveAndRead(t, r)
	c := got[0].Calls
	if len(c) != runs.MaxCalls || len(c[0].Error) > runs.CallErrorMaxBytes+8 || strings.ContainsRune(c[0].Error, 0) {
		t.Fatalf("%d calls, error of %d bytes", len(c), len(c[0].Error))
	}
	b, _ := json.Marshal(c[0])
	if !strings.Contains(string(b), `"purpose":"judge"`) {
		t.Errorf("call JSON %s", b)
	}
}

// TestTranscriptOfOldResults reads the results of a database made by
// 0.2.0: each has the transcript its columns hold and no calls.
func TestTranscriptOfOldResults(t *testing.T) {
	t.Parallel()
	dbtest.SkipOnPostgres(t, "reads a fixture SQLite file made by 0.2.0")
	ctx := context.Background()
	db, _ := dbtest.OpenFixture(t, "gauntlet-0.2.0.db")
	s, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := s.List(ctx, 10, 0)
	if err != nil || len(list) == 0 {
		t.Fatalf("runs %v %v", list, err)
	}
	results, err := s.Results(ctx, list[0].RunID)
	if err != nil || len(results) == 0 {
		t.Fatalf("results %d %v", len(results), err)
	}
	for _, r := range results {
		want := rebuilt(r.SystemPrompt, r.Prompt, r.Response)
		if !reflect.DeepEqual(r.Transcript, want) || r.Calls == nil || len(r.Calls) != 0 {
			t.Errorf("%s: transcript %+v calls %+v; want %+v and none", r.TestID, r.Transcript, r.Calls, want)
		}
	}
}
