package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
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

func TestMockLLMBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--error-rate", "1.5"},
		{"--latency", "-1s"},
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
	if err := run(context.Background(), []string{"mockllm", "-h"}, io.Discard, &out); err != nil || !strings.Contains(out.String(), "-error-rate float") {
		t.Fatalf("help: %v %q", err, out.String())
	}
}
