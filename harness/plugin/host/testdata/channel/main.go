// Command channel is the channel plugin of the host's tests: on start it
// greets the agent, tells it what it answered, clears the conversation and
// waits to be stopped; pushed requests are relayed to the agent. It
// declares api_key, secret and auth.password secret, unless its executable's name
// ends in "-legacy": then it declares nothing, as a plugin built before
// the declaration existed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

type channel struct{}

func (channel) Run(ctx context.Context, run *harness.ChannelRun) error {
	if run == nil || run.Host == nil {
		return fmt.Errorf("nil run: %w", harness.ErrInvalid)
	}
	if _, fail := run.Channel.Config["fail"]; fail {
		return errors.New("configured to fail")
	}
	greeting, _ := run.Channel.Config["greeting"].(string)
	if greeting != "" {
		user := "test:" + run.Channel.ID
		reply, err := run.Host.Chat(ctx, &harness.InboundMessage{UserID: user, Text: greeting})
		if err != nil {
			return fmt.Errorf("chat: %w", err)
		}
		if _, err := run.Host.Chat(ctx, &harness.InboundMessage{UserID: user, Text: "got: " + reply.Text}); err != nil {
			return fmt.Errorf("chat: %w", err)
		}
		if err := run.Host.Clear(ctx, user); err != nil {
			return fmt.Errorf("clear: %w", err)
		}
	}
	<-ctx.Done()
	// Still reachable while stopping: say goodbye.
	_, _ = run.Host.Chat(context.WithoutCancel(ctx), &harness.InboundMessage{UserID: "test:" + run.Channel.ID, Text: "bye"})
	return nil
}

func (channel) ValidateChannelConfig(config map[string]any) error {
	if g, ok := config["greeting"]; ok {
		if _, isString := g.(string); !isString {
			return harness.Invalid("greeting", "must be a string")
		}
	}
	return nil
}

func (channel) Receive(ctx context.Context, run *harness.ChannelRun, req *harness.InboundRequest) (*harness.InboundResponse, error) {
	if run == nil || req == nil {
		return nil, fmt.Errorf("nil request: %w", harness.ErrInvalid)
	}
	if secret, _ := run.Channel.Config["secret"].(string); secret != "" && req.Header.Get("X-Secret") != secret {
		return nil, fmt.Errorf("bad secret: %w", harness.ErrUnauthorized)
	}
	var in struct{ User, Text string }
	if err := json.Unmarshal(req.Body, &in); err != nil {
		return nil, harness.Invalid("body", "is not JSON: %v", err)
	}
	reply, err := run.Host.Chat(ctx, &harness.InboundMessage{UserID: "test:" + in.User, Text: in.Text})
	if err != nil {
		return nil, err
	}
	body := map[string]any{"reply": reply.Text}
	if len(reply.Sources) > 0 {
		var sources []string
		for _, src := range reply.Sources {
			sources = append(sources, fmt.Sprintf("%s#%d@%g", src.File, src.Chunk, src.Score))
		}
		body["sources"] = sources
	}
	return &harness.InboundResponse{Status: 202, Body: body}, nil
}

// SecretFields declares the config keys that hold secrets.
func (channel) SecretFields() []string {
	if strings.HasSuffix(filepath.Base(os.Args[0]), "-legacy") {
		return nil
	}
	return []string{"api_key", "secret", "auth.password"}
}

func main() { plugin.ServeChannel(channel{}) }
