package llmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// sse posts a chat completion request asking for a stream and returns the
// data of its events.
func sse(t *testing.T, url string, body map[string]any) (events []string, contentType string) {
	t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(url+"/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	return events, res.Header.Get("Content-Type")
}

func TestStream(t *testing.T) {
	srv := NewServer(Options{Answers: map[string]string{"capital": "The capital of France is Paris, on the Seine."}})
	defer srv.Close()
	events, ct := sse(t, srv.URL, map[string]any{"model": "m", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": []any{user("What is the capital of France?")}})
	if ct != "text/event-stream" || len(events) < 5 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("%s: %q", ct, events)
	}
	var text strings.Builder
	var finish string
	var usage map[string]any
	for _, e := range events[:len(events)-1] {
		var ch struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e), &ch); err != nil || ch.Object != "chat.completion.chunk" {
			t.Fatalf("event %s: %v", e, err)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
	}
	if text.String() != "The capital of France is Paris, on the Seine." || finish != "stop" {
		t.Fatalf("streamed %q, finish %q", text.String(), finish)
	}
	if usage == nil || usage["completion_tokens"] != float64(CountTokens(text.String())) {
		t.Fatalf("usage %v", usage)
	}
	// Without include_usage, no usage event.
	events, _ = sse(t, srv.URL, map[string]any{"model": "m", "stream": true, "messages": []any{user("What is the capital of France?")}})
	for _, e := range events {
		if strings.Contains(e, `"usage"`) {
			t.Fatalf("usage sent unasked: %s", e)
		}
	}
}

func TestStreamFaults(t *testing.T) {
	srv := NewServer(Options{CutStreams: Schedule{First: 1}, Garbage: Schedule{Every: 2}})
	defer srv.Close()
	body := map[string]any{"model": "m", "stream": true, "messages": []any{user("What is the capital of France? Say it in words.")}}
	cut, _ := sse(t, srv.URL, body)
	if len(cut) == 0 || cut[len(cut)-1] == "[DONE]" || strings.Contains(strings.Join(cut, ""), "finish_reason\":\"stop") {
		t.Fatalf("a cut stream: %q", cut)
	}
	garbage, _ := sse(t, srv.URL, body)
	if len(garbage) != 2 || json.Valid([]byte(garbage[1])) {
		t.Fatalf("a malformed stream: %q", garbage)
	}
	if st := srv.Stats(); st.CutStreams != 1 || st.Garbage != 1 {
		t.Fatalf("stats %+v", st)
	}
}
