package telegram_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram"
	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/harness"
)

// agentHost stands in for an agent: it answers every message by quoting
// it, and names the user it talks to.
type agentHost struct{}

func (agentHost) Chat(_ context.Context, msg *harness.InboundMessage) (*harness.Reply, error) {
	return &harness.Reply{Text: fmt.Sprintf("Hi %s, you said: %s", msg.UserID, msg.Text)}, nil
}

func (agentHost) Clear(context.Context, string) error { return nil }

// A telegram channel answering a user through the fake Bot API server of
// package telegramtest. Against Telegram itself, leave api_url out.
func Example() {
	const token = "123456:example-token"
	api := telegramtest.NewServer(token)
	defer api.Close()

	ch := telegram.New(telegram.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- ch.Run(ctx, &harness.ChannelRun{
			Channel: harness.ChannelConfig{
				ID: "support_bot", AgentID: "helper", Type: "telegram", Name: "Support",
				Config: map[string]any{"bot_token": token, "api_url": api.URL},
			},
			Host: agentHost{},
		})
	}()

	// A user (id 42) writes to the bot in their private chat (id 42).
	api.SendUserMessage(42, 42, "What are your opening hours?")
	wait, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sent, err := api.WaitSent(wait, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("to chat %d: %s\n", sent[0].ChatID, sent[0].Text)

	stop()
	fmt.Println("Run returned:", <-done)
	// Output:
	// to chat 42: Hi telegram:42, you said: What are your opening hours?
	// Run returned: <nil>
}
