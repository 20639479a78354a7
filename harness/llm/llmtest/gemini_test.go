package llmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// geminiResult is a raw answer of the fake's Gemini routes.
type geminiResult struct {
	status int
	header http.Header
	raw    []byte
}

// geminiPost sends body to a Gemini route of srv (path after /v1beta/).
func geminiPost(t *testing.T, srv *Server, path, key string, body any) geminiResult {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(srv.URL, "/v1")
	req, _ := http.NewRequest(http.MethodPost, base+"/v1beta/"+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("x-goog-api-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return geminiResult{status: res.StatusCode, header: res.Header, raw: raw}
}

func (r geminiResult) decode(t *testing.T) geminiResponse {
	t.Helper()
	var resp geminiResponse
	if err := json.Unmarshal(r.raw, &resp); err != nil {
		t.Fatalf("body %s: %v", r.raw, err)
	}
	return resp
}

// errorOf reads Google's error body.
func (r geminiResult) errorOf(t *testing.T) (code int, msg, status string) {
	t.Helper()
	var body struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.raw, &body); err != nil || body.Error.Code == 0 {
		t.Fatalf("error body %s: %v", r.raw, err)
	}
	return body.Error.Code, body.Error.Message, body.Error.Status
}

// events reads a stream of server-sent events: the data of each.
func events(t *testing.T, raw []byte) []geminiResponse {
	t.Helper()
	var out []geminiResponse
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an event: %q", line)
		}
		var r geminiResponse
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, r)
	}
	return out
}

func userTurn(s string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"text": s}}}
}

func TestGeminiAnswer(t *testing.T) {
	var seen []*Request
	srv := NewServer(Options{APIKey: "gk-secret", Respond: func(req *Request) *Reply { seen = append(seen, req); return nil }})
	defer srv.Close()
	r := geminiPost(t, srv, "models/gemini-2.5-flash:generateContent", "gk-secret", map[string]any{
		"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "Be brief."}}},
		"contents":          []any{userTurn("What is 2 + 3?")},
		"generationConfig":  map[string]any{"temperature": 0.2, "topP": 0.5, "maxOutputTokens": 100, "seed": 3},
	})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	resp := r.decode(t)
	c := resp.Candidates[0]
	if len(c.Content.Parts) != 1 || *c.Content.Parts[0].Text != "The answer is 5." || c.FinishReason != "STOP" ||
		c.Content.Role != "model" || resp.ModelVersion != "gemini-2.5-flash" {
		t.Fatalf("answer %s", r.raw)
	}
	u := resp.UsageMetadata
	prompt := CountTokens("Be brief.") + CountTokens("What is 2 + 3?")
	if u.PromptTokenCount != prompt || u.CandidatesTokenCount != CountTokens("The answer is 5.") ||
		u.TotalTokenCount != prompt+u.CandidatesTokenCount || u.ThoughtsTokenCount != 0 {
		t.Fatalf("usage %+v", u)
	}
	req := seen[0]
	want := []harness.Message{{Role: harness.RoleSystem, Content: "Be brief."}, {Role: harness.RoleUser, Content: "What is 2 + 3?"}}
	if !reflect.DeepEqual(req.Messages, want) || req.Model != "gemini-2.5-flash" || *req.Temperature != 0.2 || *req.TopP != 0.5 ||
		req.MaxTokens != 100 || *req.Seed != 3 || req.Stream || req.Reasoning != nil {
		t.Fatalf("request %+v", req)
	}

	// The key may come as ?key= too; a wrong one is refused in Google's shape.
	base := strings.TrimSuffix(srv.URL, "/v1")
	res, err := http.Post(base+"/v1beta/models/m:generateContent?key=gk-secret", "application/json",
		strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("?key=: %v %v", res.Status, err)
	}
	res.Body.Close()
	r = geminiPost(t, srv, "models/m:generateContent", "wrong", map[string]any{"contents": []any{userTurn("hi")}})
	if code, _, status := r.errorOf(t); r.status != 401 || code != 401 || status != "UNAUTHENTICATED" {
		t.Fatalf("wrong key: %d %s", r.status, r.raw)
	}
}

func TestGeminiTools(t *testing.T) {
	var seen []*Request
	srv := NewServer(Options{Respond: func(req *Request) *Reply { seen = append(seen, req); return nil }})
	defer srv.Close()
	tools := []any{map[string]any{"functionDeclarations": []any{map[string]any{
		"name": "get_weather", "description": "Current weather for a city",
		"parametersJsonSchema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	}}}}
	r := geminiPost(t, srv, "models/m:generateContent", "", map[string]any{"contents": []any{userTurn("What's the weather in Lisbon?")}, "tools": tools})
	resp := r.decode(t)
	parts := resp.Candidates[0].Content.Parts
	if len(parts) != 1 || parts[0].FunctionCall == nil || parts[0].FunctionCall.Name != "get_weather" || parts[0].FunctionCall.ID != "" ||
		parts[0].FunctionCall.Args["city"] != "Lisbon" || resp.Candidates[0].FinishReason != "STOP" {
		t.Fatalf("answer %s", r.raw)
	}
	if seen[0].Tools[0].Name != "get_weather" || seen[0].Tools[0].Parameters["type"] != "object" {
		t.Fatalf("tools %+v", seen[0].Tools)
	}

	// The call and its response come back: a model turn, then a user turn
	// with the function's response, named after it (Gemini's calls have
	// no id).
	r = geminiPost(t, srv, "models/m:generateContent", "", map[string]any{"tools": tools, "contents": []any{
		userTurn("What's the weather in Lisbon?"),
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "get_weather", "args": map[string]any{"city": "Lisbon"}}}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "get_weather", "response": map[string]any{"output": "21 C"}}}}},
	}})
	if got := *r.decode(t).Candidates[0].Content.Parts[0].Text; got != "The result of get_weather is 21 C." {
		t.Fatalf("answer %q", got)
	}
	want := []harness.Message{
		{Role: harness.RoleUser, Content: "What's the weather in Lisbon?"},
		{Role: harness.RoleAssistant, ToolCalls: []harness.ToolCall{{ID: "get_weather", Name: "get_weather", Arguments: `{"city":"Lisbon"}`}}},
		{Role: harness.RoleTool, ToolCallID: "get_weather", Content: "21 C"},
	}
	if !reflect.DeepEqual(seen[1].Messages, want) {
		t.Fatalf("messages %+v", seen[1].Messages)
	}
}

func TestGeminiThinkingAndStream(t *testing.T) {
	srv := NewServer(Options{Answers: map[string]string{"France": "It is Paris, the capital."}})
	defer srv.Close()
	body := map[string]any{"contents": []any{userTurn("What is the capital of France?")},
		"generationConfig": map[string]any{"thinkingConfig": map[string]any{"thinkingBudget": 1024, "includeThoughts": true}}}
	whole := geminiPost(t, srv, "models/m:generateContent", "", body).decode(t)
	parts := whole.Candidates[0].Content.Parts
	if len(parts) != 2 || !parts[0].Thought || *parts[0].Text != GeminiThought || parts[0].ThoughtSignature == "" ||
		parts[1].Thought || *parts[1].Text != "It is Paris, the capital." {
		t.Fatalf("parts %+v", parts)
	}
	if u := whole.UsageMetadata; u.ThoughtsTokenCount != CountTokens(GeminiThought) ||
		u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount+u.ThoughtsTokenCount {
		t.Fatalf("usage %+v", u)
	}

	r := geminiPost(t, srv, "models/m:streamGenerateContent?alt=sse", "", body)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v %s", r.status, r.header, r.raw)
	}
	evs := events(t, r.raw)
	if len(evs) < 4 {
		t.Fatalf("%d events: %s", len(evs), r.raw)
	}
	// Joined, the events give the whole answer; only the last has the
	// finish reason and the full usage.
	var thought, text, sig string
	for i, ev := range evs {
		c := ev.Candidates[0]
		if (c.FinishReason != "") != (i == len(evs)-1) {
			t.Fatalf("event %d: finish reason %q", i, c.FinishReason)
		}
		for _, p := range c.Content.Parts {
			if p.Thought {
				thought += *p.Text
				sig += p.ThoughtSignature
			} else {
				text += *p.Text
			}
		}
	}
	if thought != GeminiThought || text != "It is Paris, the capital." || sig != parts[0].ThoughtSignature ||
		!reflect.DeepEqual(evs[len(evs)-1].UsageMetadata, whole.UsageMetadata) {
		t.Fatalf("stream %s", r.raw)
	}
}

func TestGeminiFaults(t *testing.T) {
	srv := NewServer(Options{RateLimits: Schedule{First: 1}, RetryAfter: 3 * time.Second, Garbage: Schedule{Every: 2}, Huge: Schedule{Every: 3}, HugeBytes: 1000})
	defer srv.Close()
	body := map[string]any{"contents": []any{userTurn("hi")}}
	r := geminiPost(t, srv, "models/m:generateContent", "", body) // 1: rate limited
	if code, msg, status := r.errorOf(t); r.status != 429 || code != 429 || status != "RESOURCE_EXHAUSTED" ||
		!strings.Contains(msg, "Rate limit") || r.header.Get("Retry-After") != "3" {
		t.Fatalf("429: %v %s", r.header, r.raw)
	}
	r = geminiPost(t, srv, "models/m:generateContent", "", body) // 2: garbage
	if r.status != 200 || json.Valid(r.raw) {
		t.Fatalf("garbage: %s", r.raw)
	}
	r = geminiPost(t, srv, "models/m:streamGenerateContent?alt=sse", "", body) // 3: huge, streamed
	evs := events(t, r.raw)
	if len(evs) != 1 || len(*evs[0].Candidates[0].Content.Parts[0].Text) != 1000 || evs[0].Candidates[0].FinishReason != "MAX_TOKENS" {
		t.Fatalf("huge: %s", r.raw)
	}
	r = geminiPost(t, srv, "models/m:streamGenerateContent?alt=sse", "", body) // 4: garbage, streamed
	if !strings.HasPrefix(string(r.raw), "data: {") || strings.HasSuffix(string(r.raw), "\n") || strings.Count(string(r.raw), "data: ") != 2 {
		t.Fatalf("cut stream: %q", r.raw)
	}
	r = geminiPost(t, srv, "models/m:generateContent", "", body) // 5: fine
	if r.status != 200 || *r.decode(t).Candidates[0].Content.Parts[0].Text != "hi" {
		t.Fatalf("answer: %s", r.raw)
	}
}

func TestGeminiBadRequests(t *testing.T) {
	srv := NewServer(Options{StrictModels: true, Respond: func(req *Request) *Reply {
		if req.LastUser() == "fail" {
			return &Reply{Status: 503, Content: "overloaded"}
		}
		return nil
	}})
	defer srv.Close()
	for name, c := range map[string]struct {
		path   string
		body   any
		status int
		word   string
	}{
		"no contents":   {"models/" + DefaultModel + ":generateContent", map[string]any{}, 400, "INVALID_ARGUMENT"},
		"bad role":      {"models/" + DefaultModel + ":generateContent", map[string]any{"contents": []any{map[string]any{"role": "x", "parts": []any{}}}}, 400, "INVALID_ARGUMENT"},
		"not json":      {"models/" + DefaultModel + ":generateContent", "[", 400, "INVALID_ARGUMENT"},
		"unknown model": {"models/nope:generateContent", map[string]any{"contents": []any{userTurn("hi")}}, 404, "NOT_FOUND"},
		"reply status":  {"models/" + DefaultModel + ":generateContent", map[string]any{"contents": []any{userTurn("fail")}}, 503, "UNAVAILABLE"},
	} {
		r := geminiPost(t, srv, c.path, "", c.body)
		if code, _, status := r.errorOf(t); r.status != c.status || code != c.status || status != c.word {
			t.Errorf("%s: %d %s", name, r.status, r.raw)
		}
	}
	// An unknown method of a model is no route.
	if r := geminiPost(t, srv, "models/m:countTokens", "", map[string]any{}); r.status != 404 {
		t.Fatalf("countTokens: %d", r.status)
	}
}

func TestGeminiModels(t *testing.T) {
	srv := NewServer(Options{APIKey: "k", Models: []string{"gemini-2.5-pro"}})
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(srv.URL, "/v1")+"/v1beta/models", nil)
	req.Header.Set("x-goog-api-key", "k")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var list struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil || res.StatusCode != 200 || len(list.Models) != 2 ||
		list.Models[0].Name != "models/"+DefaultModel || list.Models[1].Name != "models/gemini-2.5-pro" {
		t.Fatalf("%d %+v %v", res.StatusCode, list, err)
	}
	res2, err := http.Get(strings.TrimSuffix(srv.URL, "/v1") + "/v1beta/models")
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	if res2.StatusCode != 401 {
		t.Fatalf("no key: %d", res2.StatusCode)
	}
}
