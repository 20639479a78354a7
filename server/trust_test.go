package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// countsCell is a matrix cell as the API returns it.
type countsCell struct {
	Status string   `json:"status"`
	Score  *float64 `json:"score"`
	Tests  int      `json:"tests"`
	Done   int      `json:"done"`
	Passed int      `json:"passed"`
	Failed int      `json:"failed"`
	Errors int      `json:"errors"`
}

// TestErrorsApartOverHTTP: the endpoint refuses every request of one
// domain and answers one test with a NUL and invalid UTF-8. Over HTTP,
// the errors are counted apart from the failures in the run, the stored
// and live matrices and the history; errored cells are "error" with no
// score; an answer holding a NUL comes back as it was sent.
func TestErrorsApartOverHTTP(t *testing.T) {
	t.Parallel()
	const odd = "5\x00 and \xff\xfe then 🦀"
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "Answer the question truthfully") {
				return &llmtest.Reply{Status: http.StatusBadRequest, Content: "this model does not do multiple choice"}
			}
			if m.Content == "What is 2 + 3?" {
				return &llmtest.Reply{Content: odd}
			}
		}
		return nil
	}}})
	id := e.start(map[string]any{"model_name": "errors-apart"})
	e.waitIdle()

	info := e.runInfo(id)
	if info.Status != "completed" || info.Complete || info.Errors != 3 || info.DoneTests != exampleTests ||
		info.Passed+info.Failed+info.Errors != info.DoneTests || info.OverallScore == nil {
		t.Fatalf("run_info: %+v", info)
	}

	var hist struct {
		Runs []runInfo `json:"runs"`
	}
	must(t, e.get("/api/history"), http.StatusOK).decode(t, &hist)
	if len(hist.Runs) != 1 || hist.Runs[0].Errors != 3 || hist.Runs[0].Complete {
		t.Errorf("history: %+v", hist.Runs)
	}

	var stored, live struct {
		Domains map[string]map[string]countsCell `json:"domains"`
	}
	must(t, e.get("/api/run/"+id+"/matrix"), http.StatusOK).decode(t, &stored)
	must(t, e.get("/api/test_matrix"), http.StatusOK).decode(t, &live)
	for name, m := range map[string]map[string]map[string]countsCell{"stored": stored.Domains, "live": live.Domains} {
		// Level 2 of knowledge replaces the domain's system prompt, so the
		// endpoint answers it.
		for _, l := range []string{"1", "3"} {
			if c := m["knowledge"][l]; c.Status != "error" || c.Score != nil || c.Errors != c.Tests || c.Failed != 0 || c.Done != c.Tests {
				t.Errorf("%s matrix knowledge/%s = %+v, want an error cell", name, l, c)
			}
		}
		for d, levels := range m {
			for l, c := range levels {
				if c.Done != c.Passed+c.Failed+c.Errors {
					t.Errorf("%s matrix %s/%s: done %d != %d + %d + %d", name, d, l, c.Done, c.Passed, c.Failed, c.Errors)
				}
			}
		}
	}

	var cell struct {
		Tests []struct {
			TestID         string         `json:"test_id"`
			Status         string         `json:"status"`
			Response       string         `json:"response"`
			ResponseBase64 string         `json:"response_base64"`
			Details        map[string]any `json:"details"`
		} `json:"tests"`
	}
	must(t, e.get("/api/run/"+id+"/tests/arithmetic/1"), http.StatusOK).decode(t, &cell)
	found := false
	for _, r := range cell.Tests {
		if r.TestID != "add-small" {
			continue
		}
		found = true
		// The fake endpoint's JSON encoder already made the invalid bytes
		// U+FFFD; the NUL and the rest arrive, are stored and come back.
		if r.ResponseBase64 != "" || r.Response != "5\x00 and \uFFFD\uFFFD then 🦀" {
			t.Errorf("odd answer = %q (base64 %q)", r.Response, r.ResponseBase64)
		}
	}
	if !found {
		t.Fatalf("no result for add-small: %+v", cell)
	}
	must(t, e.get("/api/run/"+id+"/tests/knowledge/1"), http.StatusOK).decode(t, &cell)
	if len(cell.Tests) != 2 {
		t.Fatalf("knowledge/1 results = %+v", cell)
	}
	for _, r := range cell.Tests {
		if msg, _ := r.Details["error"].(string); r.Status != "error" || !strings.Contains(msg, "multiple choice") {
			t.Errorf("knowledge result = %+v", r)
		}
	}
}
