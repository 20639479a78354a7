package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// The sample knowledge base and its suite, as the README's path uses
// them.
const (
	kbExampleDir    = "../../examples/knowledge"
	kbExampleDomain = "kestrel_support"
	kbExampleAgent  = "kestrel"
	// kbExampleEmbedder is the embedding model the hybrid server asks the
	// mock for: any name works, the mock seeds its vectors with it.
	kbExampleEmbedder = "llmtest-embedding"
)

// kbRetrieval is a result's details.retrieval.
type kbRetrieval struct {
	K         int      `json:"k"`
	Expected  []string `json:"expected"`
	Retrieved []string `json:"retrieved"`
	RecallAtK *float64 `json:"recall_at_k"`
	Hit       *bool    `json:"hit"`
	Mode      string   `json:"mode"`
	Fallback  string   `json:"fallback"`
}

// kbResult is the part of a result the test reads.
type kbResult struct {
	TestID   string  `json:"test_id"`
	Level    int     `json:"level"`
	Prompt   string  `json:"prompt"`
	Response string  `json:"response"`
	Status   string  `json:"status"`
	Score    float64 `json:"score"`
	Details  struct {
		Retrieval *kbRetrieval `json:"retrieval"`
	} `json:"details"`
}

// kbSearchHit is the part of a search result the test reads.
type kbSearchHit struct {
	File       string `json:"file"`
	BM25Rank   *int   `json:"bm25_rank"`
	VectorRank *int   `json:"vector_rank"`
}

// kbCell is the part of a matrix cell the test reads.
type kbCell struct {
	Status    string   `json:"status"`
	Score     *float64 `json:"score"`
	Tests     int      `json:"tests"`
	Passed    int      `json:"passed"`
	Errors    int      `json:"errors"`
	Retrieval *struct {
		RecallAtK *float64 `json:"recall_at_k"`
		HitRate   *float64 `json:"hit_rate"`
		Tests     int      `json:"tests"`
	} `json:"retrieval"`
}

// kbRun is what one run of the suite against the agent gave.
type kbRun struct {
	cells   map[string]kbCell // by level, "1" and "2"
	results map[string]kbResult
}

// TestKnowledgeExampleEndToEnd follows the README's path with the sample
// knowledge base: the real serve command on loopback with a SQLite file,
// the mock model over HTTP (chat and embeddings), an agent whose
// knowledge base is the four files uploaded through the API, and the
// suite run against the agent. It checks that every cell carries
// retrieval figures that agree with its results, that hybrid retrieval
// finds the right files at least as often as BM25 alone, and that the
// scores depend on retrieval: an answer is right when it comes from its
// expected source, and a test whose file leaves the knowledge base fails.
func TestKnowledgeExampleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two servers and three evaluations")
	}
	// 1,024 dimensions rather than the default 256: the hashed bags of
	// words then collide too seldom to bury the words a question shares
	// with its answer.
	model := llmtest.NewServer(llmtest.Options{EmbeddingDims: 1024})
	t.Cleanup(model.Close)
	texts := kbExampleTexts(t)
	sources := kbExampleSources(t)

	bm25, _ := runKBExample(t, model, "")
	hybrid, srv := runKBExample(t, model, kbExampleEmbedder)
	if model.Stats().EmbeddedTexts == 0 {
		t.Error("the hybrid server embedded no text")
	}

	for name, r := range map[string]kbRun{"bm25": bm25, "hybrid": hybrid} {
		checkKBRun(t, name, r, texts, sources)
	}
	for _, level := range []string{"1", "2"} {
		b, h := bm25.cells[level], hybrid.cells[level]
		t.Logf("level %s: BM25 recall@k %.3f, hit rate %.3f, score %.3f; hybrid recall@k %.3f, hit rate %.3f, score %.3f", level,
			*b.Retrieval.RecallAtK, *b.Retrieval.HitRate, *b.Score, *h.Retrieval.RecallAtK, *h.Retrieval.HitRate, *h.Score)
		if *h.Retrieval.RecallAtK < *b.Retrieval.RecallAtK {
			t.Errorf("level %s: hybrid recall@k %.3f is below BM25's %.3f", level, *h.Retrieval.RecallAtK, *b.Retrieval.RecallAtK)
		}
		if *h.Score < *b.Score {
			t.Errorf("level %s: hybrid scores %.3f, below BM25's %.3f", level, *h.Score, *b.Score)
		}
	}
	// The literal questions use the words of their answers: either
	// retrieval finds every source, and the model every answer.
	for name, r := range map[string]kbRun{"bm25": bm25, "hybrid": hybrid} {
		if c := r.cells["1"]; *c.Retrieval.RecallAtK != 1 || c.Passed != c.Tests {
			t.Errorf("%s, level 1: recall@k %.3f, %d of %d passed; want every source found and every test passed",
				name, *c.Retrieval.RecallAtK, c.Passed, c.Tests)
		}
	}
	// The paraphrased ones share stems with their answers, not words:
	// hybrid retrieval, whose embeddings match stems, finds most sources.
	if c := hybrid.cells["2"]; *c.Retrieval.RecallAtK < 0.75 {
		t.Errorf("hybrid, level 2: recall@k %.3f, want at least 0.75", *c.Retrieval.RecallAtK)
	}

	// Without the billing policy, the tests it answers fail and their
	// source is not found; the others are as they were.
	const gone = "kestrel-plans-and-billing.docx"
	srv.callStatus(t, http.MethodDelete, "/api/agents/"+kbExampleAgent+"/kb/"+gone, http.StatusOK, http.StatusNoContent)
	waitKBHybrid(t, srv, kbExampleEmbedder)
	without := startKBRun(t, srv)
	checkKBRun(t, "hybrid without "+gone, without, texts, sources)
	lost := 0
	for id, r := range without.results {
		before := hybrid.results[id]
		if slices.Contains(sources[id], gone) {
			lost++
			if r.Status != "failed" || *r.Details.Retrieval.RecallAtK != 0 || *r.Details.Retrieval.Hit {
				t.Errorf("%s: without its source, status %s, retrieval %+v; want failed, nothing found", id, r.Status, *r.Details.Retrieval)
			}
			continue
		}
		if r.Status != before.Status {
			t.Errorf("%s: %s %q without %s, %s %q with it", id, r.Status, r.Response, gone, before.Status, before.Response)
		}
	}
	if lost == 0 {
		t.Errorf("no test names %s as its source", gone)
	}
	for _, level := range []string{"1", "2"} {
		w := without.cells[level]
		t.Logf("level %s, hybrid without %s: recall@k %.3f, hit rate %.3f, score %.3f", level, gone,
			*w.Retrieval.RecallAtK, *w.Retrieval.HitRate, *w.Score)
		if h := hybrid.cells[level]; *w.Score >= *h.Score || *w.Retrieval.RecallAtK >= *h.Retrieval.RecallAtK {
			t.Errorf("level %s: without %s, score %.3f and recall@k %.3f; with it %.3f and %.3f: want both lower", level, gone,
				*w.Score, *w.Retrieval.RecallAtK, *h.Score, *h.Retrieval.RecallAtK)
		}
	}
}

// kbExampleTexts extracts the sample knowledge base's files, by name.
func kbExampleTexts(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(kbExampleDir, "kb"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(kbExampleDir, "kb", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		d, err := kbdoc.Extract(e.Name(), b)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = d.Text()
	}
	return out
}

// kbExampleSources reads the suite's expected sources, by test id.
func kbExampleSources(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, level := range []string{"level-1.yaml", "level-2.yaml"} {
		b, err := os.ReadFile(filepath.Join(kbExampleDir, "definitions", "domains", kbExampleDomain, level))
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			Tests []struct {
				ID       string `yaml:"id"`
				Expected struct {
					Sources []string `yaml:"sources"`
				} `yaml:"expected"`
			} `yaml:"tests"`
		}
		if err := yaml.Unmarshal(b, &file); err != nil {
			t.Fatalf("%s: %v", level, err)
		}
		for _, tc := range file.Tests {
			out[tc.ID] = tc.Expected.Sources
		}
	}
	return out
}

// runKBExample starts a server (hybrid when embedder is set), creates the
// agent, uploads the knowledge base and runs the suite against the agent.
func runKBExample(t *testing.T, model *llmtest.Server, embedder string) (kbRun, *serveProcess) {
	t.Helper()
	dir := t.TempDir()
	defs := filepath.Join(dir, "definitions")
	if err := os.CopyFS(defs, os.DirFS(filepath.Join(kbExampleDir, "definitions"))); err != nil {
		t.Fatal(err)
	}
	args := []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--definitions", defs,
		"--llm-base-url", model.URL, "--llm-model", llmtest.DefaultModel}
	if embedder != "" {
		args = append(args, "--embedding-model", embedder)
	}
	srv := startServe(t, args)
	srv.call(t, http.MethodPost, "/api/agents", map[string]any{"id": kbExampleAgent, "name": "Kestrel support",
		"system_prompt": "You answer the customers of Kestrel from the knowledge base."}, http.StatusCreated, nil)
	entries, err := os.ReadDir(filepath.Join(kbExampleDir, "kb"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		srv.upload(t, kbExampleAgent, filepath.Join(kbExampleDir, "kb", e.Name()))
	}
	if embedder != "" {
		waitKBHybrid(t, srv, embedder)
	}
	// What the agent would retrieve for a question of each level: ranked
	// by words, and by vectors too when hybrid.
	for _, q := range []string{"Which port does LAN sync listen on?", "What cipher encrypts stored files?"} {
		var found struct {
			Results []kbSearchHit `json:"results"`
		}
		srv.call(t, http.MethodGet, "/api/agents/"+kbExampleAgent+"/kb/search?k=3&q="+url.QueryEscape(q), nil, http.StatusOK, &found)
		byVector := slices.ContainsFunc(found.Results, func(r kbSearchHit) bool { return r.VectorRank != nil })
		byWords := slices.ContainsFunc(found.Results, func(r kbSearchHit) bool { return r.BM25Rank != nil })
		if len(found.Results) == 0 || !byWords || byVector != (embedder != "") {
			t.Errorf("search %q (embeddings %q): %+v", q, embedder, found.Results)
		}
	}
	return startKBRun(t, srv), srv
}

// waitKBHybrid waits until the agent's retrieval is hybrid: chunks are
// embedded in the background after a change of the knowledge base, and
// retrieval is BM25 until every chunk has its vector.
func waitKBHybrid(t *testing.T, srv *serveProcess, embedder string) {
	t.Helper()
	harnesstest.Eventually(t, 60*time.Second, "the knowledge base embedded", func() bool {
		var list struct {
			Embedding *struct {
				Model    string `json:"model"`
				Chunks   int    `json:"chunks"`
				Embedded int    `json:"embedded"`
			} `json:"embedding"`
		}
		srv.call(t, http.MethodGet, "/api/agents/"+kbExampleAgent+"/kb", nil, http.StatusOK, &list)
		e := list.Embedding
		if e == nil || e.Model != embedder || e.Chunks == 0 || e.Embedded != e.Chunks {
			return false
		}
		var found struct {
			Mode string `json:"mode"`
		}
		srv.call(t, http.MethodGet, "/api/agents/"+kbExampleAgent+"/kb/search?k=1&q=Kestrel", nil, http.StatusOK, &found)
		return found.Mode == "hybrid"
	})
}

// startKBRun runs the suite against the agent and reads its matrix and
// results once it completed.
func startKBRun(t *testing.T, srv *serveProcess) kbRun {
	t.Helper()
	var started struct {
		RunID string `json:"run_id"`
	}
	srv.call(t, http.MethodPost, "/api/start", map[string]any{"agent_id": kbExampleAgent}, http.StatusOK, &started)
	var matrix struct {
		Status  string                       `json:"status"`
		Domains map[string]map[string]kbCell `json:"domains"`
	}
	harnesstest.Eventually(t, 120*time.Second, "the run completed", func() bool {
		srv.call(t, http.MethodGet, "/api/run/"+started.RunID+"/matrix", nil, http.StatusOK, &matrix)
		return matrix.Status != "running" && matrix.Status != "pending"
	})
	if matrix.Status != "completed" {
		t.Fatalf("run %s ended %s:\n%s", started.RunID, matrix.Status, srv.logs.String())
	}
	var page struct {
		Results []kbResult `json:"results"`
		Total   int        `json:"total"`
	}
	srv.call(t, http.MethodGet, "/api/run/"+started.RunID+"/results?limit=1000&domain="+kbExampleDomain, nil, http.StatusOK, &page)
	out := kbRun{cells: matrix.Domains[kbExampleDomain], results: map[string]kbResult{}}
	for _, r := range page.Results {
		out.results[r.TestID] = r
	}
	if len(out.results) != page.Total || page.Total == 0 {
		t.Fatalf("run %s: %d results of %d", started.RunID, len(out.results), page.Total)
	}
	return out
}

// checkKBRun checks a run's retrieval figures against its results, and
// its answers against the knowledge base: a passed answer is a sentence
// of the test's expected source.
func checkKBRun(t *testing.T, name string, r kbRun, texts map[string]string, sources map[string][]string) {
	t.Helper()
	type sums struct {
		recall float64
		hits   int
		n      int
	}
	per := map[string]*sums{}
	for id, res := range r.results {
		ret := res.Details.Retrieval
		if ret == nil || ret.RecallAtK == nil || ret.Hit == nil {
			t.Errorf("%s, %s: details.retrieval %+v; want recall_at_k and hit", name, id, ret)
			continue
		}
		if len(sources[id]) == 0 || !slices.Equal(ret.Expected, sources[id]) || ret.K < 1 || ret.K > 5 {
			t.Errorf("%s, %s: retrieval %+v for expected sources %q", name, id, *ret, sources[id])
			continue
		}
		wantMode := "hybrid"
		if strings.HasPrefix(name, "bm25") {
			wantMode = "bm25"
		}
		if ret.Mode != wantMode || ret.Fallback != "" {
			t.Errorf("%s, %s: retrieval mode %q (fallback %q), want %s", name, id, ret.Mode, ret.Fallback, wantMode)
		}
		found := 0
		for _, s := range ret.Expected {
			if slices.Contains(ret.Retrieved, s) {
				found++
			}
		}
		if want := float64(found) / float64(len(ret.Expected)); math.Abs(*ret.RecallAtK-want) > 1e-9 || *ret.Hit != (found > 0) {
			t.Errorf("%s, %s: recall@k %v and hit %v, but %d of %q retrieved in %q", name, id, *ret.RecallAtK, *ret.Hit,
				found, ret.Expected, ret.Retrieved)
		}
		if res.Status == "passed" {
			src := strings.Join(strings.Fields(texts[sources[id][0]]), " ")
			if !strings.Contains(src, strings.Join(strings.Fields(strings.TrimPrefix(res.Response, "- ")), " ")) {
				t.Errorf("%s, %s: passed with %q, which is not from %s", name, id, res.Response, sources[id][0])
			}
		}
		level := fmt.Sprint(res.Level)
		if per[level] == nil {
			per[level] = &sums{}
		}
		s := per[level]
		s.recall += *ret.RecallAtK
		s.n++
		if *ret.Hit {
			s.hits++
		}
	}
	for _, level := range []string{"1", "2"} {
		c, ok := r.cells[level]
		s := per[level]
		if !ok || s == nil || c.Retrieval == nil || c.Retrieval.RecallAtK == nil || c.Retrieval.HitRate == nil || c.Score == nil {
			t.Fatalf("%s, level %s: cell %+v; want a score and retrieval figures", name, level, c)
		}
		if c.Errors != 0 || c.Retrieval.Tests != s.n || c.Tests != s.n {
			t.Errorf("%s, level %s: %d tests, %d errors, retrieval over %d; want %d, none, %d", name, level, c.Tests, c.Errors,
				c.Retrieval.Tests, s.n, s.n)
		}
		if math.Abs(*c.Retrieval.RecallAtK-s.recall/float64(s.n)) > 1e-9 || math.Abs(*c.Retrieval.HitRate-float64(s.hits)/float64(s.n)) > 1e-9 {
			t.Errorf("%s, level %s: cell recall@k %v, hit rate %v; the results' means are %v and %v", name, level,
				*c.Retrieval.RecallAtK, *c.Retrieval.HitRate, s.recall/float64(s.n), float64(s.hits)/float64(s.n))
		}
	}
}

// upload sends a file to an agent's knowledge base as a multipart form,
// as curl -F file=@PATH does.
func (p *serveProcess) upload(t *testing.T, agentID, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, err := mw.CreateFormFile("file", filepath.Base(path))
	if err == nil {
		_, err = w.Write(data)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(p.base+"/api/agents/"+agentID+"/kb", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if b, _ := io.ReadAll(res.Body); res.StatusCode != http.StatusCreated {
		t.Fatalf("upload %s: status %d; %s", filepath.Base(path), res.StatusCode, b)
	}
}

// callStatus sends a request without a body and fails the test unless
// the status is one of want.
func (p *serveProcess) callStatus(t *testing.T, method, path string, want ...int) {
	t.Helper()
	req, err := http.NewRequest(method, p.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if b, _ := io.ReadAll(res.Body); !slices.Contains(want, res.StatusCode) {
		t.Fatalf("%s %s: status %d, want %v; %s", method, path, res.StatusCode, want, b)
	}
}

// TestREADMEKnowledgePath runs the README's knowledge-base path as
// written, with a gauntlet command that is this test binary, the mock and
// the server on ports of their own, and checks what it prints: the search
// with both ranks, and a matrix whose cells carry retrieval figures.
func TestREADMEKnowledgePath(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands in a shell")
	}
	blocks, langs := readmeBlocks(t, "### A knowledge base, measured")
	if len(blocks) != 1 || langs[0] != "sh" {
		t.Fatalf("want one sh block, got %q", langs)
	}
	script := strings.ReplaceAll(blocks[0], "\\\n", " ")
	for _, s := range []string{"--addr 127.0.0.1:8081", "http://127.0.0.1:8081/v1", "--addr 127.0.0.1:8090", "localhost:8090"} {
		if !strings.Contains(script, s) {
			t.Fatalf("the README's commands no longer have %q", s)
		}
	}
	// The mock and the server listen on free ports and print their URLs;
	// each command waits until they serve and uses those; both stop when
	// the script ends.
	var lines []string
	for _, line := range strings.Split(script, "\n") {
		line, _, _ = strings.Cut(line, "   #")
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "gauntlet mockllm") && strings.HasSuffix(line, "&"):
			line = strings.Replace(strings.TrimSuffix(line, "&"), "127.0.0.1:8081", "127.0.0.1:0", 1)
			lines = append(lines, line+" > mock.out 2> mock.err &", "mock=$!",
				"until grep -q '^http://' mock.out 2>/dev/null; do kill -0 $mock || { cat mock.err; exit 1; }; done",
				"mockurl=$(head -n 1 mock.out)")
		case strings.HasPrefix(line, "gauntlet serve") && strings.HasSuffix(line, "&"):
			line = strings.Replace(strings.TrimSuffix(line, "&"), "127.0.0.1:8090", "127.0.0.1:0", 1)
			lines = append(lines, strings.ReplaceAll(line, "http://127.0.0.1:8081/v1", "$mockurl")+" > serve.out 2> serve.err &", "srv=$!",
				"until grep -q 'listening on' serve.out 2>/dev/null; do kill -0 $srv || { cat serve.err; exit 1; }; done",
				`addr=$(sed -n 's/.*listening on http:\/\/\([^ ]*\).*/\1/p' serve.out)`)
		default:
			lines = append(lines, strings.ReplaceAll(line, "localhost:8090", "$addr"))
		}
	}
	script = "set -e\ntrap 'kill $srv $mock 2>/dev/null; wait' EXIT\n" + strings.Join(lines, "\n") + "\n"

	dir, bin := readmeSandbox(t)
	out, err := runSandboxed(dir, bin, script)
	if err != nil {
		serveErr, _ := os.ReadFile(filepath.Join(dir, "serve.err"))
		t.Fatalf("the README's commands failed: %v\n%s\nserver log:\n%s", err, out, serveErr)
	}
	for _, want := range []string{`"vector_rank":`, `"bm25_rank":`, `"file":"kestrel-troubleshooting.html"`,
		`"kestrel_support":{"1":{`, `"retrieval":{`, `"recall_at_k":`, `"hit_rate":`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the README's commands do not print %s:\n%s", want, out)
		}
	}
}
