package server_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// kbSuite is a domain whose tests name the knowledge-base files that
// should answer them: refund (policy.md, retrieved), warranty
// (warranty.md, retrieved, and policy.md, not), miss (a file the base
// does not have). Its cell's recall@k is (1 + 0.5 + 0) / 3 = 0.5 and its
// hit rate 2/3.
var kbSuite = map[string]string{
	"domains/kb/domain.yaml": `id: kb
name: Knowledge base
evaluator_id: number
enabled: true
`,
	"domains/kb/level-1.yaml": `tests:
  - id: refund
    name: Refund window
    prompt: How many days is the refund window?
    expected: {answer: "30", type: numeric, sources: [policy.md]}
  - id: warranty
    name: Warranty
    prompt: Are manufacturing defects covered?
    expected: {answer: "2", type: numeric, sources: [warranty.md, policy.md]}
  - id: miss
    name: Gift wrapping
    prompt: Gift wrapping offered?
    expected: {answer: "0", type: numeric, sources: [giftwrap.md]}
`,
}

// newKBEnv starts a server with the examples and kbSuite, and agent kb
// whose knowledge base has policy.md, shipping.md and warranty.md.
func newKBEnv(t *testing.T) *testEnv {
	t.Helper()
	ep := &supportEndpoint{}
	e := newEngineEnv(t, engineConfig{files: kbSuite, llm: llmtest.Options{Respond: ep.respond}})
	e.createAgent("kb", "Answer from the knowledge base.")
	for name, text := range map[string]string{
		"policy.md":   "Our policy: refunds within 30 days of purchase.",
		"shipping.md": "Parcels ship by courier in two business days.",
		"warranty.md": "Warranty: manufacturing defects stay covered for two years.",
	} {
		must(t, e.post("/api/agents/kb/kb", map[string]any{"filename": name, "content": text}), http.StatusCreated)
	}
	return e
}

// retrievalBody is a result's details.retrieval as the API sends it.
type retrievalBody struct {
	K         int      `json:"k"`
	Expected  []string `json:"expected"`
	Retrieved []string `json:"retrieved"`
	RecallAtK float64  `json:"recall_at_k"`
	Hit       bool     `json:"hit"`
	Mode      string   `json:"mode"`
}

// cellRetrievalBody is a matrix cell's retrieval as the API sends it.
type cellRetrievalBody struct {
	RecallAtK float64 `json:"recall_at_k"`
	HitRate   float64 `json:"hit_rate"`
	Tests     int     `json:"tests"`
}

// matrixRetrieval reads the retrieval of every cell of a matrix answer;
// a cell without the key is absent from the map.
func matrixRetrieval(t *testing.T, r *response) map[string]*cellRetrievalBody {
	t.Helper()
	var m struct {
		Domains map[string]map[string]map[string]json.RawMessage `json:"domains"`
	}
	r.decode(t, &m)
	out := map[string]*cellRetrievalBody{}
	for d, levels := range m.Domains {
		for l, c := range levels {
			if raw, ok := c["retrieval"]; ok {
				var cr cellRetrievalBody
				if err := json.Unmarshal(raw, &cr); err != nil {
					t.Fatalf("%s/%s retrieval %s: %v", d, l, raw, err)
				}
				out[d+"/"+l] = &cr
			}
		}
	}
	return out
}

// TestExpectedSourcesWritten: expected.sources are written and read back
// through the tests API; bad ones are 422 naming the field.
func TestExpectedSourcesWritten(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	test := func(id string, sources any) map[string]any {
		return map[string]any{"id": id, "domain_id": "math", "level": 1, "prompt": "Which file?",
			"expected": map[string]any{"answer": "7", "type": "integer", "sources": sources}}
	}
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf("doc%d.md", i)
	}
	for _, tc := range []struct {
		name    string
		sources any
		where   string
	}{
		{"a path", []string{"docs/policy.md"}, "body.expected.sources[0]"},
		{"a parent", []string{"ok.md", "../gauntlet.db"}, "body.expected.sources[1]"},
		{"empty", []string{""}, "body.expected.sources[0]"},
		{"a control character", []string{"a\tb.md"}, "body.expected.sources[0]"},
		{"twice", []string{"a.md", "b.md", "a.md"}, "body.expected.sources[2]"},
		{"too many", many, "body.expected.sources"},
		{"too long", []string{strings.Repeat("x", 256)}, "body.expected.sources[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustProblem(t, e.post("/api/settings/tests", test("s-"+strings.ReplaceAll(tc.name, " ", "-"), tc.sources)),
				http.StatusUnprocessableEntity, tc.where)
		})
	}

	got := must(t, e.post("/api/settings/tests", test("s1", []string{"policy.md", "Handbook v2.pdf"})), http.StatusCreated).object(t)
	if exp, _ := got["expected"].(map[string]any); fmt.Sprint(exp["sources"]) != "[policy.md Handbook v2.pdf]" {
		t.Errorf("created: expected %v", got["expected"])
	}
	got = must(t, e.get("/api/settings/tests/s1"), http.StatusOK).object(t)
	if exp, _ := got["expected"].(map[string]any); fmt.Sprint(exp["sources"]) != "[policy.md Handbook v2.pdf]" {
		t.Errorf("read back: expected %v", got["expected"])
	}
	mustProblem(t, e.put("/api/settings/tests/s1", map[string]any{"expected": map[string]any{"sources": []string{"a/b"}}}),
		http.StatusUnprocessableEntity, "body.expected.sources[0]")
	// null clears them: the key is then absent.
	got = must(t, e.put("/api/settings/tests/s1", map[string]any{"expected": map[string]any{"sources": nil}}), http.StatusOK).object(t)
	if exp, _ := got["expected"].(map[string]any); exp["sources"] != nil || exp["answer"] != "7" {
		t.Errorf("cleared: expected %v", got["expected"])
	}
}

// TestRetrievalInResults: an agent run of kbSuite records each result's
// details.retrieval and the cell's retrieval in every answer that carries
// them: the run's matrix, the live matrix, the cell's tests, the run's
// details, its results pages and its export. A run of the bare model has
// neither.
func TestRetrievalInResults(t *testing.T) {
	t.Parallel()
	e := newKBEnv(t)
	id := e.runToEnd(map[string]any{"agent_id": "kb", "domains": []string{"kb"}})

	want := map[string]*cellRetrievalBody{"kb/1": {RecallAtK: 0.5, HitRate: 2.0 / 3, Tests: 3}}
	for name, path := range map[string]string{"run matrix": "/api/run/" + id + "/matrix", "live matrix": "/api/test_matrix"} {
		if got := matrixRetrieval(t, must(t, e.get(path), http.StatusOK)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: retrieval %v, want %v", name, got, want)
		}
	}

	wantResults := map[string]retrievalBody{
		// "days" matches shipping.md too; the whole base fits the budget,
		// so k is its 3 chunks, and the one that matched nothing is not
		// retrieved.
		"refund":   {K: 3, Expected: []string{"policy.md"}, Retrieved: []string{"policy.md", "shipping.md"}, RecallAtK: 1, Hit: true, Mode: "bm25"},
		"warranty": {K: 3, Expected: []string{"warranty.md", "policy.md"}, Retrieved: []string{"warranty.md"}, RecallAtK: 0.5, Hit: true, Mode: "bm25"},
		"miss":     {K: 3, Expected: []string{"giftwrap.md"}, Retrieved: []string{}, RecallAtK: 0, Hit: false, Mode: "bm25"},
	}
	check := func(where string, results []json.RawMessage) {
		t.Helper()
		if len(results) != 3 {
			t.Fatalf("%s: %d results", where, len(results))
		}
		for _, raw := range results {
			var r struct {
				TestID   string `json:"test_id"`
				Expected struct {
					Sources []string `json:"sources"`
				} `json:"expected"`
				Details struct {
					Retrieval *retrievalBody `json:"retrieval"`
				} `json:"details"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			w := wantResults[r.TestID]
			if r.Details.Retrieval == nil || !reflect.DeepEqual(*r.Details.Retrieval, w) {
				t.Errorf("%s: %s details.retrieval %+v, want %+v", where, r.TestID, r.Details.Retrieval, w)
			}
			if !reflect.DeepEqual(r.Expected.Sources, w.Expected) {
				t.Errorf("%s: %s expected.sources %v", where, r.TestID, r.Expected.Sources)
			}
		}
	}
	var cell struct {
		Tests []json.RawMessage `json:"tests"`
	}
	must(t, e.get("/api/run/"+id+"/tests/kb/1"), http.StatusOK).decode(t, &cell)
	check("cell tests", cell.Tests)
	var details struct {
		TestResults []json.RawMessage `json:"test_results"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &details)
	check("run details", details.TestResults)
	var page struct {
		Results []json.RawMessage `json:"results"`
	}
	must(t, e.get("/api/run/"+id+"/results?domain=kb&level=1"), http.StatusOK).decode(t, &page)
	check("results page", page.Results)
	export := must(t, e.get("/api/run/"+id+"/export?format=jsonl"), http.StatusOK)
	var lines []json.RawMessage
	for _, l := range strings.Split(strings.TrimSpace(string(export.body)), "\n") {
		lines = append(lines, json.RawMessage(l))
	}
	check("export", lines)

	bare := e.runToEnd(map[string]any{"domains": []string{"kb"}})
	if got := matrixRetrieval(t, must(t, e.get("/api/run/"+bare+"/matrix"), http.StatusOK)); len(got) != 0 {
		t.Errorf("bare-model run: cell retrieval %v", got)
	}
	r := must(t, e.get("/api/run/"+bare+"/tests/kb/1"), http.StatusOK)
	if strings.Contains(string(r.body), `"retrieval"`) {
		t.Errorf("bare-model run: results carry retrieval: %s", r.body)
	}
}

// TestCompareRetrieval: the same suite against knowledge base v1 and v2
// of the agent, compared: the cell says how recall and hit rate changed.
func TestCompareRetrieval(t *testing.T) {
	t.Parallel()
	e := newKBEnv(t)
	v1 := e.runToEnd(map[string]any{"agent_id": "kb", "domains": []string{"kb"}, "model_name": "kb v1"})
	// v2's warranty file no longer says what the warranty test asks about.
	must(t, e.put("/api/agents/kb/kb/warranty.md", map[string]any{"content": "Warranty: two years."}), http.StatusOK)
	v2 := e.runToEnd(map[string]any{"agent_id": "kb", "domains": []string{"kb"}, "model_name": "kb v2"})
	var c struct {
		Cells map[string]map[string]struct {
			Retrieval *struct {
				BaseRecallAtK float64 `json:"base_recall_at_k"`
				HeadRecallAtK float64 `json:"head_recall_at_k"`
				Delta         float64 `json:"delta"`
				BaseHitRate   float64 `json:"base_hit_rate"`
				HeadHitRate   float64 `json:"head_hit_rate"`
				Tests         int     `json:"tests"`
			} `json:"retrieval"`
		} `json:"cells"`
	}
	must(t, e.get("/api/compare?base="+v1+"&head="+v2), http.StatusOK).decode(t, &c)
	r := c.Cells["kb"]["1"].Retrieval
	if r == nil || r.Tests != 3 || r.BaseRecallAtK != 0.5 || math.Abs(r.HeadRecallAtK-1.0/3) > 1e-9 || math.Abs(r.Delta+1.0/6) > 1e-9 ||
		r.BaseHitRate != 2.0/3 || r.HeadHitRate != 1.0/3 {
		t.Errorf("compared retrieval %+v", r)
	}
}
