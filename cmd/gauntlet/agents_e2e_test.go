package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// serveProcess is a running `gauntlet serve`, started through run.
type serveProcess struct {
	base   string
	cancel context.CancelFunc
	done   chan error
	logs   *syncBuffer
}

// startServe runs `gauntlet serve` with args and waits for its start-up
// line.
func startServe(t *testing.T, args []string) *serveProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	p := &serveProcess{cancel: cancel, done: make(chan error, 1), logs: &syncBuffer{}}
	go func() {
		p.done <- run(ctx, append([]string{"serve"}, args...), pw, p.logs)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no start-up line: %v (%v)\n%s", err, <-p.done, p.logs.String())
	}
	go io.Copy(io.Discard, pr)
	p.base = strings.Fields(strings.SplitAfter(line, "listening on ")[1])[0]
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop cancels serve's context and waits for it to return.
func (p *serveProcess) stop(t *testing.T) {
	t.Helper()
	if p.cancel == nil {
		return
	}
	p.cancel()
	p.cancel = nil
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("serve returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// call sends a JSON request and decodes the JSON answer into out (when
// not nil), failing the test unless the status is want.
func (p *serveProcess) call(t *testing.T, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d; %s", method, path, res.StatusCode, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v; %s", method, path, err, data)
		}
	}
}

// channelStatus reads a channel's status from its agent's list.
func (p *serveProcess) channelStatus(t *testing.T, agentID, channelID string) string {
	t.Helper()
	var body struct {
		Channels []struct {
			ID        string `json:"id"`
			Status    string `json:"status"`
			LastError string `json:"last_error"`
		} `json:"channels"`
	}
	p.call(t, http.MethodGet, "/api/agents/"+agentID+"/channels", nil, http.StatusOK, &body)
	for _, c := range body.Channels {
		if c.ID == channelID {
			return c.Status
		}
	}
	t.Fatalf("channel %s not listed", channelID)
	return ""
}

// TestAgentsSurviveRestart runs the real serve command, has a telegram
// conversation through a fake Bot API, stops the server and starts it
// again on the same data directory: the channel comes back running by
// itself, answers, and the conversation goes on where it was.
func TestAgentsSurviveRestart(t *testing.T) {
	const token = "31337:restart-test-token-AbC"
	tg := telegramtest.NewServer(token)
	t.Cleanup(tg.Close)
	var (
		mu   sync.Mutex
		reqs []*llmtest.Request
	)
	model := llmtest.NewServer(llmtest.Options{Respond: func(r *llmtest.Request) *llmtest.Reply {
		mu.Lock()
		reqs = append(reqs, r)
		mu.Unlock()
		return &llmtest.Reply{Content: "echo: " + r.LastUser()}
	}})
	t.Cleanup(model.Close)
	lastRequest := func() *llmtest.Request {
		mu.Lock()
		defer mu.Unlock()
		if len(reqs) == 0 {
			t.Fatal("the model got no request")
		}
		return reqs[len(reqs)-1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	dir := t.TempDir()
	args := []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"),
		"--definitions", filepath.Join(dir, "defs"), "--llm-base-url", model.URL, "--llm-model", "e2e-model"}

	first := startServe(t, args)
	first.call(t, http.MethodPost, "/api/agents", map[string]any{"id": "tg_bot", "name": "Bot", "system_prompt": "You echo."}, http.StatusCreated, nil)
	var ch struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	first.call(t, http.MethodPost, "/api/agents/tg_bot/channels", map[string]any{
		"type": "telegram", "name": "Telegram", "config": map[string]any{"bot_token": token, "api_url": tg.URL},
	}, http.StatusCreated, &ch)
	first.call(t, http.MethodPost, "/api/agents/tg_bot/channels/"+ch.ID+"/start", nil, http.StatusOK, &ch)
	if ch.Status != "running" {
		t.Fatalf("status %q after start", ch.Status)
	}

	tg.SendUserMessage(5, 5, "first message")
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Text != "echo: first message" || sent[0].ChatID != 5 {
		t.Fatalf("sent %+v", sent[0])
	}
	if req := lastRequest(); req.Model != "e2e-model" {
		t.Errorf("model %q, want e2e-model", req.Model)
	}
	// The update is confirmed (a later getUpdates carried its offset), so
	// the next server does not see it again.
	harnesstest.Eventually(t, 30*time.Second, "the update confirmed", func() bool { return tg.Pending() == 0 })

	first.stop(t)
	if polls := tg.ActivePolls(); polls != 0 {
		t.Errorf("%d polls still held after the server stopped", polls)
	}

	second := startServe(t, args)
	if !harnesstest.Within(30*time.Second, func() bool { return second.channelStatus(t, "tg_bot", ch.ID) == "running" }) {
		t.Fatalf("the channel did not come back running:\n%s", second.logs.String())
	}
	tg.SendUserMessage(5, 5, "second message")
	sent, err = tg.WaitSent(ctx, 2)
	if err != nil {
		t.Fatalf("%v\n%s", err, second.logs.String())
	}
	if len(sent) != 2 || sent[1].Text != "echo: second message" {
		t.Fatalf("sent %+v", sent)
	}
	var text strings.Builder
	for _, m := range lastRequest().Messages {
		text.WriteString(string(m.Role) + ": " + m.Content + "\n")
	}
	for _, want := range []string{"system: You echo.", "user: first message", "assistant: echo: first message", "user: second message"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the model request after the restart lacks %q:\n%s", want, text.String())
		}
	}

	// Through the API too, the conversation goes on.
	var out struct {
		Success  bool   `json:"success"`
		Response string `json:"response"`
	}
	second.call(t, http.MethodPost, "/api/agents/tg_bot/chat", map[string]any{"user_id": "telegram:5", "message": "third"}, http.StatusOK, &out)
	if !out.Success || out.Response != "echo: third" {
		t.Errorf("chat answered %+v", out)
	}
	if !strings.Contains(lastRequestText(lastRequest()), "second message") {
		t.Errorf("the API chat does not continue the telegram conversation")
	}
	second.stop(t)
	_, tokenSecret, _ := strings.Cut(token, ":")
	if logs := first.logs.String() + second.logs.String(); strings.Contains(logs, tokenSecret) {
		t.Error("the bot token is in the log")
	}
}

func lastRequestText(r *llmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}
