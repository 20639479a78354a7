package telegram_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram"
	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/harness"
)

// TestEmptyPollsArePaced: a Bot API server that answers getUpdates at
// once, with nothing, is not asked again at once: the channel waits the
// minimum interval between two polls that brought nothing.
func TestEmptyPollsArePaced(t *testing.T) {
	var polls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/getMe"):
			w.Write([]byte(`{"ok":true,"result":{"id":1,"is_bot":true,"first_name":"Eager","username":"eager_bot"}}`))
		case strings.HasSuffix(r.URL.Path, "/getUpdates"):
			polls.Add(1)
			w.Write([]byte(`{"ok":true,"result":[]}`))
		default:
			w.Write([]byte(`{"ok":true,"result":true}`))
		}
	}))
	defer srv.Close()
	ch := telegram.New(telegram.Options{PollTimeout: 3 * time.Second, MinPollInterval: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := ch.Run(ctx, &harness.ChannelRun{
		Channel: harness.ChannelConfig{ID: "tg", Type: "telegram", Config: map[string]any{"bot_token": testToken, "api_url": srv.URL}},
		Host:    &fakeHost{},
	})
	if err != nil {
		t.Fatal(err)
	}
	// One second at one poll per 200 ms: about 5, never thousands.
	if n := polls.Load(); n < 2 || n > 7 {
		t.Errorf("%d getUpdates calls in one second, want about 5", n)
	}
}

// TestGreetingNamesAgent: /start greets with the agent's name, not the
// channel's.
func TestGreetingNamesAgent(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	ch := telegram.New(telegram.Options{PollTimeout: 3 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ch.Run(ctx, &harness.ChannelRun{
			Channel: harness.ChannelConfig{ID: "tg", AgentID: "ada", Type: "telegram", Name: "support line",
				Config: map[string]any{"bot_token": testToken, "api_url": srv.URL}},
			Host:      &fakeHost{},
			AgentName: "Ada the helper",
		})
	}()
	defer func() { cancel(); <-done }()
	srv.SendUserMessage(5, 5, "/start")
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	sent, err := srv.WaitSent(wctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sent[0].Text, "Ada the helper") || strings.Contains(sent[0].Text, "support line") {
		t.Errorf("greeting %q, want the agent's name", sent[0].Text)
	}
}
