package host

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

// A channel plugin chats with the agent through the host (over the
// broker) and back, receives pushed requests, and stops on cancel.
func TestChannelRelay(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "channel", "gauntlet-channel-testchan")
	m, reg := newManager(t, Options{Dir: dir})
	ch, ok := reg.Channel("testchan")
	if !ok {
		t.Fatal("channel type testchan not registered")
	}

	host := newFakeHost()
	run := &harness.ChannelRun{
		Channel: harness.ChannelConfig{ID: "c1", AgentID: "a1", Type: "testchan", Config: map[string]any{"greeting": "hello", "secret": "s3cret"}},
		Host:    host,
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, run) }()

	host.waitFor(t, "the relay", func(msgs []harness.InboundMessage, cleared []string) bool {
		return len(msgs) >= 2 && len(cleared) == 1
	})
	msgs, cleared := host.snapshot()
	if msgs[0] != (harness.InboundMessage{UserID: "test:c1", Text: "hello"}) || msgs[1].Text != "got: HELLO" || cleared[0] != "test:c1" {
		t.Errorf("host saw %+v, cleared %v", msgs, cleared)
	}

	// A pushed request reaches the plugin, which asks the agent.
	recv := ch.(harness.Receiver)
	resp, err := recv.Receive(t.Context(), run, &harness.InboundRequest{
		Body: []byte(`{"user":"u9","text":"ping"}`), Header: http.Header{"X-Secret": {"s3cret"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(resp.Body)
	// The reply's sources cross too.
	if resp.Status != 202 || string(body) != `{"reply":"PING","sources":["faq.md#2@0.5","guide.pdf#0@0.25"]}` {
		t.Errorf("receive: %d %s", resp.Status, body)
	}
	_, err = recv.Receive(t.Context(), run, &harness.InboundRequest{Body: []byte(`{}`)})
	if !errors.Is(err, harness.ErrUnauthorized) {
		t.Errorf("receive without the secret: %v, want ErrUnauthorized", err)
	}
	// The agent's error keeps its kind on the way back.
	_, err = recv.Receive(t.Context(), run, &harness.InboundRequest{
		Body: []byte(`{"user":"u9","text":"fail"}`), Header: http.Header{"X-Secret": {"s3cret"}},
	})
	if !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("receive, agent failing: %v, want ErrNotFound", err)
	}

	// Config validation, in the plugin.
	v := ch.(harness.ChannelConfigValidator)
	var ve *harness.ValidationError
	if err := v.ValidateChannelConfig(map[string]any{"greeting": 3}); !errors.As(err, &ve) || ve.Fields[0].Field != "greeting" {
		t.Errorf("bad config: %v", err)
	}
	if err := v.ValidateChannelConfig(map[string]any{"greeting": "hi"}); err != nil {
		t.Errorf("good config: %v", err)
	}

	// Cancel: Run returns nil promptly, after the plugin said goodbye
	// (the host is still reachable while it stops).
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	host.waitFor(t, "the goodbye", func(msgs []harness.InboundMessage, _ []string) bool {
		return msgs[len(msgs)-1].Text == "bye"
	})
	if s := status(t, m, "gauntlet-channel-testchan"); s.Health != HealthRunning || len(s.Capabilities) != 2 {
		t.Errorf("status %+v", s)
	}
}

// A channel whose Run fails returns the error; one whose plugin crashes
// returns an unavailable error, and runs again after a restart.
func TestChannelFailures(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "channel", "gauntlet-channel-testchan")
	m, reg := newManager(t, Options{Dir: dir, RestartBackoff: 10 * time.Millisecond})
	ch, _ := reg.Channel("testchan")

	err := ch.Run(t.Context(), &harness.ChannelRun{Channel: harness.ChannelConfig{ID: "c2", Config: map[string]any{"fail": true}}, Host: newFakeHost()})
	if err == nil || err.Error() != "configured to fail" {
		t.Errorf("failing run: %v", err)
	}
	if err := ch.Run(t.Context(), nil); !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("nil run: %v", err)
	}

	host := newFakeHost()
	run := &harness.ChannelRun{Channel: harness.ChannelConfig{ID: "c3", Config: map[string]any{"greeting": "x"}}, Host: host}
	done := make(chan error, 1)
	go func() { done <- ch.Run(t.Context(), run) }()
	host.waitFor(t, "the greeting", func(msgs []harness.InboundMessage, cleared []string) bool { return len(cleared) == 1 })
	pid := status(t, m, "gauntlet-channel-testchan").PID
	killPID(t, pid)
	select {
	case err := <-done:
		if !errors.Is(err, plugin.ErrUnavailable) {
			t.Errorf("run of a killed plugin: %v, want ErrUnavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the plugin was killed")
	}
	// The agent service runs it again: the plugin restarts.
	ctx, cancel := context.WithCancel(t.Context())
	host2 := newFakeHost()
	go func() { done <- ch.Run(ctx, &harness.ChannelRun{Channel: run.Channel, Host: host2}) }()
	host2.waitFor(t, "the greeting after the restart", func(msgs []harness.InboundMessage, cleared []string) bool { return len(cleared) == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
	if s := status(t, m, "gauntlet-channel-testchan"); s.PID == pid || s.Restarts != 1 {
		t.Errorf("status %+v", s)
	}
}
