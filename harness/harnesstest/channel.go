package harnesstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// ChannelCase is a channel record the channel under test can run.
type ChannelCase struct {
	Name string
	// Config is the channel record's config.
	Config map[string]any
	// Send, when set, makes one user message reach the running channel:
	// through a fake of the messaging service the test set up, or by
	// calling the channel's Receive. The kit then expects the channel to
	// pass it to its host (ChannelHost.Chat).
	Send func(ctx context.Context, run *harness.ChannelRun) error
	// Wait is how long the kit waits for the message sent to reach the
	// host. Default 10 s.
	Wait time.Duration
	// Settle is how long the channel runs before it is cancelled, when
	// there is no Send. Default 100 ms.
	Settle time.Duration
}

// TestChannel checks that c behaves as every harness.Channel must. cases
// are channel records c can run; without any, the kit runs one with an
// empty config.
//
// The checks, each a subtest:
//   - nil-run: Run(ctx, nil) returns an error promptly, without panicking;
//   - stops-on-cancel: each case runs with a fake host until its context
//     is cancelled; Run must then return nil within 2 s (Run may also end
//     by itself with nil, never with an error, for a case it accepts);
//   - cancelled-context: Run with a context already cancelled returns
//     nil within 2 s;
//   - uses-host, for cases with Send: the message sent reaches the host's
//     Chat within the case's Wait;
//   - concurrent: two records of the case's config run at once (the same
//     Channel serves every record of its type) and both stop on cancel;
//   - validate-config, when c is a harness.ChannelConfigValidator: each
//     case's config is accepted; nil and empty configs give nil or an
//     error wrapping harness.ErrInvalid, without panicking;
//   - receive, when c is a harness.Receiver: a nil run or request gives an
//     error; an empty or garbage request gives an error or a response,
//     without panicking.
func TestChannel(t *testing.T, c harness.Channel, cases ...ChannelCase) {
	t.Helper()
	if len(cases) == 0 {
		cases = []ChannelCase{{Name: "empty config", Config: map[string]any{}}}
	}
	for i := range cases {
		if cases[i].Name == "" {
			cases[i].Name = fmt.Sprintf("case %d", i)
		}
		if cases[i].Wait <= 0 {
			cases[i].Wait = 10 * time.Second
		}
		if cases[i].Settle <= 0 {
			cases[i].Settle = 100 * time.Millisecond
		}
	}

	t.Run("nil-run", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), callLimit)
		defer cancel()
		o := call(promptLimit, func() (struct{}, error) { return struct{}{}, c.Run(ctx, nil) })
		if p := o.problem("Run(ctx, nil)"); p != "" {
			t.Fatal(p)
		}
		if o.err == nil {
			t.Error("Run(ctx, nil) returned nil, want an error")
		}
	})

	t.Run("stops-on-cancel", func(t *testing.T) {
		for i, cc := range cases {
			runCase(t, c, cc, fmt.Sprintf("harnesstest-%d", i), false)
		}
	})

	t.Run("cancelled-context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for i, cc := range cases {
			run := newRun(cc, fmt.Sprintf("harnesstest-%d", i), NewHost())
			o := call(promptLimit, func() (struct{}, error) { return struct{}{}, c.Run(ctx, run) })
			if p := o.problem("Run with a cancelled context"); p != "" {
				t.Errorf("%s: %s", cc.Name, p)
			} else if o.err != nil {
				t.Errorf("%s: Run with a cancelled context: %v, want nil", cc.Name, o.err)
			}
		}
	})

	if hasSend(cases) {
		t.Run("uses-host", func(t *testing.T) {
			for i, cc := range cases {
				if cc.Send == nil {
					continue
				}
				runCase(t, c, cc, fmt.Sprintf("harnesstest-host-%d", i), true)
			}
		})
	}

	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for i, cc := range cases {
			for j := range 2 {
				wg.Go(func() { runCase(t, c, cc, fmt.Sprintf("harnesstest-c%d-%d", i, j), false) })
			}
		}
		wg.Wait()
	})

	if v, ok := c.(harness.ChannelConfigValidator); ok {
		t.Run("validate-config", func(t *testing.T) {
			for _, cc := range cases {
				o := call(callLimit, func() (struct{}, error) { return struct{}{}, v.ValidateChannelConfig(cc.Config) })
				if p := o.problem("ValidateChannelConfig"); p != "" {
					t.Errorf("%s: %s", cc.Name, p)
				} else if o.err != nil {
					t.Errorf("%s: ValidateChannelConfig refuses a config Run accepts: %v", cc.Name, o.err)
				}
			}
			for _, cfg := range []map[string]any{nil, {}} {
				o := call(callLimit, func() (struct{}, error) { return struct{}{}, v.ValidateChannelConfig(cfg) })
				if p := o.problem(fmt.Sprintf("ValidateChannelConfig(%#v)", cfg)); p != "" {
					t.Error(p)
				} else if o.err != nil && !errors.Is(o.err, harness.ErrInvalid) {
					t.Errorf("ValidateChannelConfig(%#v): %v does not wrap harness.ErrInvalid", cfg, o.err)
				}
			}
		})
	}

	if r, ok := c.(harness.Receiver); ok {
		t.Run("receive", func(t *testing.T) {
			run := newRun(cases[0], "harnesstest-receive", NewHost())
			for _, tc := range []struct {
				name string
				run  *harness.ChannelRun
				req  *harness.InboundRequest
				fail bool
			}{
				{"nil run", nil, &harness.InboundRequest{Body: []byte(`{}`)}, true},
				{"nil request", run, nil, true},
				{"empty request", run, &harness.InboundRequest{}, false},
				{"garbage body", run, &harness.InboundRequest{Body: []byte("\x00not json{")}, false},
			} {
				o := call(callLimit, func() (*harness.InboundResponse, error) { return r.Receive(t.Context(), tc.run, tc.req) })
				if p := o.problem("Receive with a " + tc.name); p != "" {
					t.Error(p)
				} else if tc.fail && o.err == nil {
					t.Errorf("Receive with a %s: no error", tc.name)
				}
			}
		})
	}
}

func hasSend(cases []ChannelCase) bool {
	for _, c := range cases {
		if c.Send != nil {
			return true
		}
	}
	return false
}

func newRun(cc ChannelCase, id string, host harness.ChannelHost) *harness.ChannelRun {
	cfg := make(map[string]any, len(cc.Config))
	for k, v := range cc.Config {
		cfg[k] = v
	}
	return &harness.ChannelRun{
		Channel: harness.ChannelConfig{
			ID: id, AgentID: "harnesstest", Type: "harnesstest", Name: cc.Name, Config: cfg,
			Status: harness.ChannelRunning, CreatedAt: "2025-01-01 00:00:00",
		},
		Host: host,
	}
}

// runCase runs one channel record until it is cancelled and checks that
// Run returns nil promptly. With send, it sends a message first (the
// case's Send) and checks that it reached the host.
func runCase(t *testing.T, c harness.Channel, cc ChannelCase, id string, send bool) {
	t.Helper()
	host := NewHost()
	run := newRun(cc, id, host)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan outcome[struct{}], 1)
	go func() {
		done <- call(24*time.Hour, func() (struct{}, error) { return struct{}{}, c.Run(ctx, run) })
	}()
	ended := func(o outcome[struct{}]) {
		t.Helper()
		if p := o.problem("Run"); p != "" {
			t.Errorf("%s: %s", cc.Name, p)
		} else if o.err != nil {
			t.Errorf("%s: Run: %v", cc.Name, o.err)
		}
	}
	if send && cc.Send != nil {
		if err := cc.Send(ctx, run); err != nil {
			t.Errorf("%s: Send: %v", cc.Name, err)
		} else if !host.WaitChat(cc.Wait) {
			t.Errorf("%s: the message sent did not reach the host's Chat within %s", cc.Name, cc.Wait)
		}
	} else {
		select {
		case o := <-done:
			ended(o) // ended by itself: it must be nil
			return
		case <-time.After(cc.Settle):
		}
	}
	cancel()
	select {
	case o := <-done:
		ended(o)
	case <-time.After(promptLimit):
		t.Errorf("%s: Run did not return within %s of its context's cancellation", cc.Name, promptLimit)
	}
}

// Host is a harness.ChannelHost for channel tests: it answers every
// message with "echo: " and its text, and records what it was asked.
type Host struct {
	mu      sync.Mutex
	msgs    []harness.InboundMessage
	cleared []string
	chat    chan struct{}
}

// NewHost returns an empty Host.
func NewHost() *Host { return &Host{chat: make(chan struct{}, 1)} }

// Chat records msg and answers it.
func (h *Host) Chat(ctx context.Context, msg *harness.InboundMessage) (*harness.Reply, error) {
	if msg == nil {
		return nil, fmt.Errorf("chat: nil message: %w", harness.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.msgs = append(h.msgs, *msg)
	h.mu.Unlock()
	select {
	case h.chat <- struct{}{}:
	default:
	}
	return &harness.Reply{Text: "echo: " + msg.Text}, nil
}

// Clear records the user whose conversation was cleared.
func (h *Host) Clear(ctx context.Context, userID string) error {
	h.mu.Lock()
	h.cleared = append(h.cleared, userID)
	h.mu.Unlock()
	return nil
}

// Messages returns the messages received so far.
func (h *Host) Messages() []harness.InboundMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]harness.InboundMessage(nil), h.msgs...)
}

// Cleared returns the users whose conversations were cleared so far.
func (h *Host) Cleared() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.cleared...)
}

// WaitChat waits up to d for a message and reports whether one came.
func (h *Host) WaitChat(d time.Duration) bool {
	if len(h.Messages()) > 0 {
		return true
	}
	select {
	case <-h.chat:
		return true
	case <-time.After(d):
		return len(h.Messages()) > 0
	}
}
