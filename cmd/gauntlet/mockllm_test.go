package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
)

// startMockLLM runs "gauntlet mockllm" with args until the test ends and
// returns its base URL and a function that stops it and returns run's error.
func startMockLLM(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"mockllm", "--addr", "127.0.0.1:0"}, args...), pw, io.Discard)
		pw.CloseWithError(io.EOF)
		errc <- err
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, pr)
	}()
	var url string
	select {
	case url = <-lines:
	case err := <-errc:
		cancel()
		t.Fatalf("mockllm exited: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("mockllm printed no URL")
	}
	stopped := false
	stop := func() error {
		stopped = true
		cancel()
		select {
		case err := <-errc:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("mockllm did not stop")
			return nil
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	return url, stop
}

func TestMockLLM(t *testing.T) {
	url, stop := startMockLLM(t, "--model", "demo-model", "--latency", "5ms")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Fatalf("first line %q is not the base URL", url)
	}

	res, err := http.Post(url+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"demo-model","messages":[{"role":"user","content":"What is 40 + 2?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	err = json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || len(body.Choices) != 1 ||
		body.Choices[0].Message.Content != "The answer is 42." || body.Model != "demo-model" {
		t.Fatalf("status %d, body %+v, err %v", res.StatusCode, body, err)
	}

	res, err = http.Get(url + "/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), `"id":"demo-model"`) {
		t.Fatalf("models %s", b)
	}

	if err := stop(); err != nil {
		t.Fatalf("run returned %v after the context ended", err)
	}
	if _, err := http.Get(url + "/models"); err == nil {
		t.Fatal("still serving after stop")
	}
}

func TestMockLLMFaults(t *testing.T) {
	url, stop := startMockLLM(t, "--rate-limit-every", "1", "--retry-after", "2s", "--timeout-rate", "0")
	res, err := http.Post(url+"/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "2" {
		t.Fatalf("status %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestMockLLMRateLimit: --rate-limit throttles like a provider, with the
// headers a client waits by.
func TestMockLLMRateLimit(t *testing.T) {
	url, _ := startMockLLM(t, "--rate-limit", "60")
	// 60 a minute: a bucket of one, refilled each second.
	if status, body, _ := chatTo(t, url, "hi"); status != http.StatusOK {
		t.Fatalf("first: %d %s", status, body)
	}
	res, err := http.Post(url+"/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	h := res.Header
	if res.StatusCode != http.StatusTooManyRequests || h.Get("Retry-After") != "1" || h.Get("Retry-After-Ms") == "" ||
		h.Get("X-Ratelimit-Limit-Requests") != "60" || h.Get("X-Ratelimit-Remaining-Requests") != "0" || h.Get("X-Ratelimit-Reset-Requests") == "" {
		t.Fatalf("status %d, headers %v", res.StatusCode, h)
	}
}

// chatTo posts a chat completion and returns the status, the raw body and
// the answer's text.
func chatTo(t *testing.T, url, prompt string) (int, []byte, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"messages": []any{map[string]string{"role": "user", "content": prompt}}})
	res, err := http.Post(url+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(raw, &out) == nil && len(out.Choices) == 1 {
		return res.StatusCode, raw, out.Choices[0].Message.Content
	}
	return res.StatusCode, raw, ""
}

func TestMockLLMFaultFlags(t *testing.T) {
	t.Run("huge", func(t *testing.T) {
		url, _ := startMockLLM(t, "--huge-rate", "1", "--huge-bytes", "300000")
		status, raw, text := chatTo(t, url, "hi")
		if status != 200 || len(text) != 300000 || len(raw) < 300000 {
			t.Fatalf("status %d, %d bytes of text", status, len(text))
		}
	})
	t.Run("nul", func(t *testing.T) {
		url, _ := startMockLLM(t, "--nul-rate", "1")
		if status, _, text := chatTo(t, url, "What is 2 + 3?"); status != 200 || text != "The\x00 answer is 5." {
			t.Fatalf("status %d, text %q", status, text)
		}
	})
	t.Run("hang", func(t *testing.T) {
		url, _ := startMockLLM(t, "--hang-rate", "1")
		c := &http.Client{Timeout: 200 * time.Millisecond}
		start := time.Now()
		_, err := c.Post(url+"/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		if err == nil || time.Since(start) < 190*time.Millisecond {
			t.Fatalf("err %v after %v", err, time.Since(start))
		}
	})
	t.Run("rates are fractions", func(t *testing.T) {
		url, _ := startMockLLM(t, "--nul-rate", "0.5", "--huge-rate", "0.25", "--huge-bytes", "2048", "--seed", "7")
		nuls, huge := 0, 0
		for range 200 {
			_, _, text := chatTo(t, url, "What is 2 + 3?")
			switch {
			case len(text) == 2048:
				huge++
			case strings.Contains(text, "\x00"):
				nuls++
			case text != "The answer is 5.":
				t.Fatalf("answer %q", text)
			}
		}
		// Huge wins over NUL: about 50 huge, about 75 of the other 150 NUL.
		if huge < 25 || huge > 80 || nuls < 45 || nuls > 110 {
			t.Fatalf("%d huge and %d NUL answers of 200", huge, nuls)
		}
	})
}

// TestModelClientResponseLimit: --llm-max-response-bytes reaches the model
// client, against answers from gauntlet mockllm --huge-rate.
func TestModelClientResponseLimit(t *testing.T) {
	url, _ := startMockLLM(t, "--huge-rate", "1", "--huge-bytes", "2000000")
	client := func(args ...string) *llm.Client {
		t.Helper()
		var s settings
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		if err := s.register(fs, appSettings); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse(append([]string{"--llm-base-url", url, "--llm-retries", "2"}, args...)); err != nil {
			t.Fatal(err)
		}
		if err := s.check(); err != nil {
			t.Fatal(err)
		}
		c, err := s.modelClient()
		if err != nil {
			t.Fatal(err)
		}
		return c.Default()
	}
	req := &harness.ChatRequest{Messages: []harness.Message{{Role: harness.RoleUser, Content: "hi"}}}
	t.Setenv("LLM_MAX_RESPONSE_BYTES", "")
	os.Unsetenv("LLM_MAX_RESPONSE_BYTES")

	c := client("--llm-max-response-bytes", "1000000")
	_, err := c.Chat(context.Background(), req)
	if !errors.Is(err, llm.ErrResponseTooLarge) || !strings.Contains(err.Error(), "more than 1000000 bytes") {
		t.Fatalf("err %v", err)
	}
	if st := c.Stats(); st.Attempts != 1 {
		t.Fatalf("an answer too large was retried: %+v", st)
	}
	resp, err := client().Chat(context.Background(), req) // the 4 MiB default
	if err != nil || len(resp.Message.Content) != 2000000 {
		t.Fatalf("err %v", err)
	}
}

func TestMockLLMBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--nul-rate", "-0.1"},
		{"--huge-rate", "2"},
		{"--hang-rate", "NaN"},
		{"--huge-bytes", "0"},
		{"--error-rate", "1.5"},
		{"--latency", "-1s"},
		{"--rate-limit", "-5"},
		{"--max-in-flight", "-1"},
		{"--bogus"},
		{"extra"},
		{"--addr", "127.0.0.1:notaport"},
	} {
		err := run(context.Background(), append([]string{"mockllm"}, args...), io.Discard, io.Discard)
		if err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"mockllm", "-h"}, io.Discard, &out); err != nil || !strings.Contains(out.String(), "-error-rate float") ||
		!strings.Contains(out.String(), "--hang-rate ") || !strings.Contains(out.String(), "--nul-rate ") ||
		!strings.Contains(out.String(), "--huge-rate ") || !strings.Contains(out.String(), "-huge-bytes int") {
		t.Fatalf("help: %v %q", err, out.String())
	}
}
