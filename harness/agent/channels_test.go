package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// fakeChannel is a channel implementation that records its runs and
// fails on demand. It also validates configs and receives pushed requests.
type fakeChannel struct {
	mu       sync.Mutex
	runs     []harness.ChannelRun
	starts   []time.Time
	active   int
	failNext int  // the next runs fail at once
	endNow   bool // runs return nil at once
	fail     chan error
}

var (
	_ harness.Channel                = (*fakeChannel)(nil)
	_ harness.ChannelConfigValidator = (*fakeChannel)(nil)
	_ harness.Receiver               = (*fakeChannel)(nil)
)

func registerFake(t *testing.T, e *env) *fakeChannel {
	t.Helper()
	f := &fakeChannel{fail: make(chan error)}
	if err := e.reg.RegisterChannel("fake", f); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fakeChannel) Run(ctx context.Context, run *harness.ChannelRun) error {
	f.mu.Lock()
	f.runs = append(f.runs, *run)
	f.starts = append(f.starts, time.Now())
	if f.failNext > 0 {
		f.failNext--
		f.mu.Unlock()
		tok, _ := run.Channel.Config["bot_token"].(string)
		// The body quoted holds a NUL and a byte that is not UTF-8, as a
		// remote error may: the status is stored all the same.
		return fmt.Errorf("getMe: 401 Unauthorized for https://api.example/bot%s/getMe (token %s): \x00\xff", tok, tok)
	}
	if f.endNow {
		f.mu.Unlock()
		return nil
	}
	f.active++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return nil
	case err := <-f.fail:
		return err
	}
}

func (f *fakeChannel) ValidateChannelConfig(cfg map[string]any) error {
	if cfg["bad"] == true {
		return harness.Invalid("bad", "is refused")
	}
	return nil
}

func (f *fakeChannel) Receive(ctx context.Context, run *harness.ChannelRun, req *harness.InboundRequest) (*harness.InboundResponse, error) {
	var body struct {
		UserID  string `json:"user_id"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, harness.Invalid("body", "%v", err)
	}
	if req.Header.Get("X-Secret") != run.Channel.Config["secret"] {
		return nil, harness.ErrUnauthorized
	}
	reply, err := run.Host.Chat(ctx, &harness.InboundMessage{UserID: "fake:" + body.UserID, Text: body.Message})
	if err != nil {
		return nil, err
	}
	return &harness.InboundResponse{Body: map[string]any{"success": true, "response": reply.Text}}, nil
}

func (f *fakeChannel) running() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.active
}

func (f *fakeChannel) runCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.runs)
}

func (f *fakeChannel) lastRun() harness.ChannelRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[len(f.runs)-1]
}

func (f *fakeChannel) waitRuns(t *testing.T, n int) {
	t.Helper()
	harnesstest.Eventually(t, 0, fmt.Sprintf("%d runs", n), func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.runs) >= n && (f.active > 0 || f.failNext == 0 && f.endNow)
	})
}

// plainChannel runs until stopped and receives nothing.
type plainChannel struct{}

func (plainChannel) Run(ctx context.Context, _ *harness.ChannelRun) error {
	<-ctx.Done()
	return nil
}

const botToken = "123456:SECRET-bot-token-value"

func (e *env) channelStatus(agentID, id string) harness.ChannelConfig {
	e.t.Helper()
	c, err := e.svc.Supervisor().Get(e.ctx, agentID, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func TestChannelLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fake := registerFake(t, e)
	e.createAgent("a", "")
	ctx := e.ctx

	c, err := e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{Type: "fake", Name: "My bot",
		Config: map[string]any{"bot_token": botToken, "api_url": "http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !harness.ValidID(c.ID) || c.AgentID != "a" || c.Status != harness.ChannelStopped || !timestampRE.MatchString(c.CreatedAt) {
		t.Errorf("created %+v", c)
	}
	if c.Config["bot_token"] != agent.Mask || c.Config["api_url"] != "http://127.0.0.1:1" {
		t.Errorf("config = %v, want the token masked and the rest as is", c.Config)
	}
	list, err := e.svc.Supervisor().List(ctx, "a")
	if err != nil || len(list) != 1 || list[0].ID != c.ID {
		t.Fatalf("Channels = %v, %v", list, err)
	}

	started, err := e.svc.Supervisor().Start(ctx, "a", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if started.Status != harness.ChannelRunning {
		t.Errorf("status after start = %s", started.Status)
	}
	fake.waitRuns(t, 1)
	run := fake.lastRun()
	if run.Channel.Config["bot_token"] != botToken || run.Channel.ID != c.ID {
		t.Errorf("Run got %+v, want the unmasked record", run.Channel)
	}
	// The host chats with the agent, per user.
	reply, err := run.Host.Chat(ctx, &harness.InboundMessage{UserID: "telegram:1", Text: "hi from telegram"})
	if err != nil || reply.Text != "hi from telegram" {
		t.Fatalf("host chat = %+v, %v", reply, err)
	}
	if h, _ := e.svc.History(ctx, "a", "telegram:1"); len(h) != 2 {
		t.Errorf("history of the channel's user = %v", h)
	}
	if err := run.Host.Clear(ctx, "telegram:1"); err != nil {
		t.Fatal(err)
	}
	if h, _ := e.svc.History(ctx, "a", "telegram:1"); len(h) != 0 {
		t.Errorf("history after host clear = %v", h)
	}
	// Starting again does nothing.
	if _, err := e.svc.Supervisor().Start(ctx, "a", c.ID); err != nil || fake.runCount() != 1 {
		t.Errorf("second start: %v, %d runs", err, fake.runCount())
	}

	stopped, err := e.svc.Supervisor().Stop(ctx, "a", c.ID)
	if err != nil || stopped.Status != harness.ChannelStopped {
		t.Fatalf("stop = %+v, %v", stopped, err)
	}
	if fake.running() != 0 {
		t.Error("Run still running after stop")
	}
	if _, err := e.svc.Supervisor().Stop(ctx, "a", c.ID); err != nil {
		t.Errorf("stopping a stopped channel: %v", err)
	}

	e.svc.Supervisor().Start(ctx, "a", c.ID)
	fake.waitRuns(t, 2)
	if err := e.svc.Supervisor().Delete(ctx, "a", c.ID); err != nil {
		t.Fatal(err)
	}
	if fake.running() != 0 {
		t.Error("Run still running after delete")
	}
	for name, err := range map[string]error{
		"get":    func() error { _, err := e.svc.Supervisor().Get(ctx, "a", c.ID); return err }(),
		"start":  func() error { _, err := e.svc.Supervisor().Start(ctx, "a", c.ID); return err }(),
		"stop":   func() error { _, err := e.svc.Supervisor().Stop(ctx, "a", c.ID); return err }(),
		"delete": e.svc.Supervisor().Delete(ctx, "a", c.ID),
		"update": func() error {
			_, err := e.svc.Supervisor().Update(ctx, "a", c.ID, func(*harness.ChannelConfig) error { return nil })
			return err
		}(),
		"list of unknown agent": func() error { _, err := e.svc.Supervisor().List(ctx, "nobody"); return err }(),
	} {
		if !errors.Is(err, harness.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
}

func TestChannelOfAnotherAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	registerFake(t, e)
	e.createAgent("a", "")
	e.createAgent("b", "")
	c, _ := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{Type: "fake"})
	if _, err := e.svc.Supervisor().Start(e.ctx, "b", c.ID); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("starting a's channel through b: %v", err)
	}
	if err := e.svc.Supervisor().Delete(e.ctx, "b", c.ID); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("deleting a's channel through b: %v", err)
	}
}

func TestChannelCreateValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	registerFake(t, e)
	e.createAgent("a", "")
	for _, tc := range []struct {
		name  string
		c     harness.ChannelConfig
		field string
	}{
		{"no type", harness.ChannelConfig{}, "type"},
		{"unknown type", harness.ChannelConfig{Type: "carrier-pigeon"}, "type"},
		{"bad id", harness.ChannelConfig{ID: "../x", Type: "fake"}, "id"},
		{"config refused by the channel", harness.ChannelConfig{Type: "fake", Config: map[string]any{"bad": true}}, "config.bad"},
		{"mask as a value", harness.ChannelConfig{Type: "fake", Config: map[string]any{"bot_token": agent.Mask}}, "config.bot_token"},
		{"other agent", harness.ChannelConfig{Type: "fake", AgentID: "b"}, "agent_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Supervisor().Create(e.ctx, "a", tc.c)
			wantInvalid(t, err, tc.field)
		})
	}
	c, err := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{ID: "ch.1", Type: "fake"})
	if err != nil || c.ID != "ch.1" || c.Name != "fake" || c.Config == nil {
		t.Fatalf("create with id = %+v, %v", c, err)
	}
	if _, err := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{ID: "ch.1", Type: "fake"}); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("duplicate id = %v", err)
	}
	if _, err := e.svc.Supervisor().Create(e.ctx, "nobody", harness.ChannelConfig{Type: "fake"}); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("unknown agent = %v", err)
	}
}

func TestChannelUpdateKeepsMaskedSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fake := registerFake(t, e)
	e.createAgent("a", "")
	ctx := e.ctx
	c, _ := e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{Type: "fake",
		Config: map[string]any{"bot_token": botToken, "secret": "hmac-key-1", "api_url": "u1"}})
	e.svc.Supervisor().Start(ctx, "a", c.ID)
	fake.waitRuns(t, 1)

	// The client sends back what it read, masks included, with a change.
	u, err := e.svc.Supervisor().Update(ctx, "a", c.ID, func(x *harness.ChannelConfig) error {
		if x.Config["bot_token"] != agent.Mask {
			t.Errorf("apply saw the config unmasked: %v", x.Config)
		}
		x.Name = "renamed"
		x.Config = map[string]any{"bot_token": agent.Mask, "secret": "hmac-key-2", "api_url": "u1"}
		x.Status, x.LastError = harness.ChannelError, "forged"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "renamed" || u.Config["bot_token"] != agent.Mask || u.Config["secret"] != agent.Mask || u.Status != harness.ChannelRunning || u.LastError != "" {
		t.Errorf("updated = %+v", u)
	}
	// The running channel was restarted with the new record.
	fake.waitRuns(t, 2)
	cfg := fake.lastRun().Channel.Config
	if cfg["bot_token"] != botToken || cfg["secret"] != "hmac-key-2" || cfg["api_url"] != "u1" {
		t.Errorf("restarted with config %v", cfg)
	}
	if fake.running() != 1 {
		t.Errorf("%d runs active, want 1", fake.running())
	}
	for _, tc := range []struct {
		name  string
		apply func(*harness.ChannelConfig)
		field string
	}{
		{"id", func(x *harness.ChannelConfig) { x.ID = "other" }, "id"},
		{"agent", func(x *harness.ChannelConfig) { x.AgentID = "b" }, "agent_id"},
		{"type", func(x *harness.ChannelConfig) { x.Type = "nope" }, "type"},
		{"mask with nothing stored", func(x *harness.ChannelConfig) { x.Config["password"] = agent.Mask }, "config.password"},
		{"refused config", func(x *harness.ChannelConfig) { x.Config["bad"] = true }, "config.bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Supervisor().Update(ctx, "a", c.ID, func(x *harness.ChannelConfig) error { tc.apply(x); return nil })
			wantInvalid(t, err, tc.field)
		})
	}
	if fake.runCount() != 2 {
		t.Errorf("refused updates restarted the channel: %d runs", fake.runCount())
	}
}

// TestChannelSecretsStayPut: an update that changes where a channel sends
// its secrets (a *url* key changes, appears or goes) must carry the secrets
// in clear; the mask is refused, naming each masked field, and nothing is
// stored. Keeping the URLs, the mask keeps the stored secret.
func TestChannelSecretsStayPut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	registerFake(t, e)
	e.createAgent("a", "")
	ctx := e.ctx
	stored := map[string]any{"bot_token": botToken, "api_url": "https://bots.example/one",
		"hook": map[string]any{"callback_url": "https://cb.example/", "secret": "hmac-1"}}
	c, err := e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{Type: "fake", Config: stored})
	if err != nil {
		t.Fatal(err)
	}
	hook := func(url, secret string) map[string]any {
		return map[string]any{"callback_url": url, "secret": secret}
	}
	refused := []struct {
		name   string
		config map[string]any
		fields []string
	}{
		{"api_url changes", map[string]any{"bot_token": agent.Mask, "api_url": "https://evil.example/",
			"hook": hook("https://cb.example/", agent.Mask)}, []string{"config.bot_token", "config.hook.secret"}},
		{"api_url removed", map[string]any{"bot_token": agent.Mask,
			"hook": hook("https://cb.example/", "hmac-1")}, []string{"config.bot_token"}},
		{"nested callback_url changes", map[string]any{"bot_token": agent.Mask, "api_url": "https://bots.example/one",
			"hook": hook("https://evil.example/", agent.Mask)}, []string{"config.bot_token", "config.hook.secret"}},
		{"a new URL key", map[string]any{"bot_token": agent.Mask, "api_url": "https://bots.example/one", "Webhook_URL": "https://evil.example/",
			"hook": hook("https://cb.example/", "hmac-1")}, []string{"config.bot_token"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Supervisor().Update(ctx, "a", c.ID, func(x *harness.ChannelConfig) error {
				x.Config = tc.config
				return nil
			})
			var ve *harness.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a validation error", err)
			}
			var got []string
			for _, f := range ve.Fields {
				got = append(got, f.Field)
				if !strings.Contains(f.Message, "send the secret again") {
					t.Errorf("%s: %q does not ask for the secret", f.Field, f.Message)
				}
			}
			if !slices.Equal(got, tc.fields) {
				t.Errorf("fields %v, want %v", got, tc.fields)
			}
			if cfg := e.storedConfig(c.ID); !reflect.DeepEqual(cfg, stored) {
				t.Errorf("stored config %v after a refused update", cfg)
			}
		})
	}

	t.Run("the mask with the URLs kept", func(t *testing.T) {
		_, err := e.svc.Supervisor().Update(ctx, "a", c.ID, func(x *harness.ChannelConfig) error {
			x.Name = "renamed"
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if cfg := e.storedConfig(c.ID); !reflect.DeepEqual(cfg, stored) {
			t.Errorf("stored config %v", cfg)
		}
	})
	t.Run("the URL changes with the secrets in clear", func(t *testing.T) {
		want := map[string]any{"bot_token": "123:new", "api_url": "https://bots.example/two",
			"hook": hook("https://cb.example/", "hmac-2")}
		_, err := e.svc.Supervisor().Update(ctx, "a", c.ID, func(x *harness.ChannelConfig) error {
			x.Config = want
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if cfg := e.storedConfig(c.ID); !reflect.DeepEqual(cfg, want) {
			t.Errorf("stored config %v, want %v", cfg, want)
		}
	})
}

func TestChannelFailureBackoffAndRedaction(t *testing.T) {
	t.Parallel()
	// The error status lasts as long as a backoff: long enough to be seen
	// by a poll on a loaded machine reading PostgreSQL (the default 20,
	// 40 and 80 ms were all missed once).
	e := newEnv(t, withOptions(func(o *agent.Options) { o.RetryBaseDelay = 400 * time.Millisecond; o.RetryMaxDelay = 2 * time.Second }))
	fake := registerFake(t, e)
	fake.failNext = 3
	e.createAgent("a", "")
	c, _ := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{Type: "fake", Config: map[string]any{"bot_token": botToken}})
	e.svc.Supervisor().Start(e.ctx, "a", c.ID)

	harnesstest.Eventually(t, 0, "status error", func() bool { return e.channelStatus("a", c.ID).Status == harness.ChannelError })
	got := e.channelStatus("a", c.ID)
	if strings.Contains(got.LastError, "SECRET") || !strings.Contains(got.LastError, "401 Unauthorized") || !strings.Contains(got.LastError, agent.Mask) {
		t.Errorf("last_error = %q, want the error with the token redacted", got.LastError)
	}
	if !strings.HasSuffix(got.LastError, ": \uFFFD\uFFFD") {
		t.Errorf("last_error = %q, want its NUL and bad byte replaced", got.LastError)
	}
	// Three failures, then a run that lasts: status running again.
	fake.waitRuns(t, 4)
	harnesstest.Eventually(t, 0, "status running", func() bool { return e.channelStatus("a", c.ID).Status == harness.ChannelRunning })
	fake.mu.Lock()
	starts := append([]time.Time(nil), fake.starts...)
	fake.mu.Unlock()
	base := e.opts.RetryBaseDelay
	for i, want := range []time.Duration{base, 2 * base, 4 * base} {
		if gap := starts[i+1].Sub(starts[i]); gap < want {
			t.Errorf("restart %d came after %v, want at least %v", i+1, gap, want)
		}
	}
	// A failure while running is retried too.
	fake.fail <- fmt.Errorf("connection reset (token %s)", botToken)
	fake.waitRuns(t, 5)
	if log := e.logs.String(); strings.Contains(log, "SECRET") || !strings.Contains(log, "channel failed") {
		t.Errorf("logs hold the token or miss the failure:\n%s", log)
	}
	e.svc.Supervisor().Stop(e.ctx, "a", c.ID)
	if st := e.channelStatus("a", c.ID); st.Status != harness.ChannelStopped {
		t.Errorf("status after stop = %s", st.Status)
	}
}

func TestChannelStopDuringBackoff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOptions(func(o *agent.Options) { o.RetryBaseDelay = time.Hour; o.RetryMaxDelay = time.Hour }))
	fake := registerFake(t, e)
	fake.failNext = 1
	e.createAgent("a", "")
	c, _ := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{Type: "fake"})
	e.svc.Supervisor().Start(e.ctx, "a", c.ID)
	harnesstest.Eventually(t, 0, "status error", func() bool { return e.channelStatus("a", c.ID).Status == harness.ChannelError })
	done := make(chan struct{})
	go func() {
		e.svc.Supervisor().Stop(e.ctx, "a", c.ID)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stop waited for the backoff")
	}
	if st := e.channelStatus("a", c.ID); st.Status != harness.ChannelStopped || st.LastError == "" {
		t.Errorf("after stop: %+v, want stopped with the last error kept", st)
	}
}

func TestChannelRunEndsOnItsOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fake := registerFake(t, e)
	fake.endNow = true
	e.createAgent("a", "")
	c, _ := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{Type: "fake"})
	e.svc.Supervisor().Start(e.ctx, "a", c.ID)
	harnesstest.Eventually(t, 0, "status stopped", func() bool { return e.channelStatus("a", c.ID).Status == harness.ChannelStopped })
	e.reopen()
	e.svc.Supervisor().Resume(e.ctx)
	if fake.runCount() != 1 {
		t.Errorf("a channel that ended by itself was resumed: %d runs", fake.runCount())
	}
}

func TestChannelPanicIsAFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.reg.RegisterChannel("panicky", panicChannel{}); err != nil {
		t.Fatal(err)
	}
	e.createAgent("a", "")
	c, _ := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{Type: "panicky"})
	e.svc.Supervisor().Start(e.ctx, "a", c.ID)
	harnesstest.Eventually(t, 0, "status error", func() bool {
		st := e.channelStatus("a", c.ID)
		return st.Status == harness.ChannelError && strings.Contains(st.LastError, "panicked")
	})
}

type panicChannel struct{}

func (panicChannel) Run(context.Context, *harness.ChannelRun) error { panic("boom") }

func TestChannelResumeAfterReopen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fake := registerFake(t, e)
	e.createAgent("a", "")
	on, _ := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{ID: "on", Type: "fake", Config: map[string]any{"bot_token": botToken}})
	off, _ := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{ID: "off", Type: "fake"})
	e.svc.Supervisor().Start(e.ctx, "a", on.ID)
	e.svc.Supervisor().Start(e.ctx, "a", off.ID)
	e.svc.Supervisor().Stop(e.ctx, "a", off.ID)
	fake.waitRuns(t, 2)

	e.reopen() // the process stops and starts again
	if fake.running() != 0 {
		t.Fatal("Close left a channel running")
	}
	if st := e.channelStatus("a", on.ID); st.Status != harness.ChannelStopped {
		t.Errorf("before Resume the channel reads %s, want stopped", st.Status)
	}
	if err := e.svc.Supervisor().Resume(e.ctx); err != nil {
		t.Fatal(err)
	}
	fake.waitRuns(t, 3)
	if st := e.channelStatus("a", on.ID); st.Status != harness.ChannelRunning {
		t.Errorf("resumed channel reads %s", st.Status)
	}
	if st := e.channelStatus("a", off.ID); st.Status != harness.ChannelStopped {
		t.Errorf("stopped channel reads %s", st.Status)
	}
	if fake.runCount() != 3 || fake.lastRun().Channel.ID != "on" || fake.lastRun().Channel.Config["bot_token"] != botToken {
		t.Errorf("runs: %d, last %+v", fake.runCount(), fake.lastRun().Channel)
	}
	// The resumed channel's host still works.
	if r, err := fake.lastRun().Host.Chat(e.ctx, &harness.InboundMessage{UserID: "x", Text: "back?"}); err != nil || r.Text != "back?" {
		t.Errorf("host chat after resume: %+v, %v", r, err)
	}
}

func TestChannelResumeMissingType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	registerFake(t, e)
	e.createAgent("a", "")
	c, _ := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{Type: "fake"})
	e.svc.Supervisor().Start(e.ctx, "a", c.ID)
	e.svc.Close()
	// The next process does not have the plugin.
	e.reg = harness.NewRegistry()
	e.opts.Registry = e.reg
	e.open()
	if err := e.svc.Supervisor().Resume(e.ctx); err != nil {
		t.Fatalf("Resume = %v, want the failure recorded, not returned", err)
	}
	st := e.channelStatus("a", c.ID)
	if st.Status != harness.ChannelError || !strings.Contains(st.LastError, "not available") {
		t.Errorf("channel = %+v", st)
	}
	_, err := e.svc.Supervisor().Start(e.ctx, "a", c.ID)
	wantInvalid(t, err, "type")
}

func TestInbound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	registerFake(t, e)
	if err := e.reg.RegisterChannel("plain", plainChannel{}); err != nil {
		t.Fatal(err)
	}
	e.createAgent("a", "")
	ctx := e.ctx
	c, _ := e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{Type: "fake", Config: map[string]any{"secret": "s3cret"}})
	p, _ := e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{Type: "plain"})
	body := []byte(`{"user_id":"42","message":"pushed hello"}`)
	header := map[string][]string{"X-Secret": {"s3cret"}}

	if _, err := e.svc.Supervisor().Inbound(ctx, "nope", &harness.InboundRequest{Body: body}); !errors.Is(err, harness.ErrNotFound) || !errors.Is(err, agent.ErrNotReceiving) {
		t.Errorf("unknown channel: %v", err)
	}
	if _, err := e.svc.Supervisor().Inbound(ctx, c.ID, &harness.InboundRequest{Body: body, Header: header}); !errors.Is(err, harness.ErrConflict) || !errors.Is(err, agent.ErrNotReceiving) {
		t.Errorf("stopped channel: %v", err)
	}
	e.svc.Supervisor().Start(ctx, "a", c.ID)
	e.svc.Supervisor().Start(ctx, "a", p.ID)
	resp, err := e.svc.Supervisor().Inbound(ctx, c.ID, &harness.InboundRequest{Body: body, Header: header})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := resp.Body.(map[string]any); m["response"] != "pushed hello" {
		t.Errorf("response = %+v", resp.Body)
	}
	if h, _ := e.svc.History(ctx, "a", "fake:42"); len(h) != 2 {
		t.Errorf("history of the pushed user = %v", h)
	}
	if _, err := e.svc.Supervisor().Inbound(ctx, c.ID, &harness.InboundRequest{Body: body}); !errors.Is(err, harness.ErrUnauthorized) || errors.Is(err, agent.ErrNotReceiving) {
		t.Errorf("wrong secret: %v", err)
	}
	if _, err := e.svc.Supervisor().Inbound(ctx, p.ID, &harness.InboundRequest{Body: body}); !errors.Is(err, harness.ErrInvalid) || !errors.Is(err, agent.ErrNotReceiving) {
		t.Errorf("channel without Receive: %v", err)
	}
}

// TestSecretsNeverReturned checks every record the service returns.
func TestSecretsNeverReturned(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fake := registerFake(t, e)
	fake.failNext = 1
	e.createAgent("a", "")
	ctx := e.ctx
	cfg := map[string]any{"bot_token": botToken, "webhook_secret": "whsec-VALUE", "Password": "hunter2-VALUE",
		"nested": map[string]any{"api_key": "nested-KEY-VALUE"}, "api_url": "http://x"}
	var returned []any
	c, err := e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{Type: "fake", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	returned = append(returned, c)
	if cfg["bot_token"] != botToken {
		t.Error("CreateChannel changed the caller's map")
	}
	s, _ := e.svc.Supervisor().Start(ctx, "a", c.ID)
	returned = append(returned, s)
	harnesstest.Eventually(t, 0, "a failure", func() bool { return e.channelStatus("a", c.ID).LastError != "" })
	fake.waitRuns(t, 2)
	u, _ := e.svc.Supervisor().Update(ctx, "a", c.ID, func(x *harness.ChannelConfig) error { x.Name = "n"; return nil })
	returned = append(returned, u)
	d, _ := e.svc.Get(ctx, "a")
	list, _ := e.svc.Supervisor().List(ctx, "a")
	one, _ := e.svc.Supervisor().Get(ctx, "a", c.ID)
	st, _ := e.svc.Supervisor().Stop(ctx, "a", c.ID)
	returned = append(returned, d, list, one, st)
	b, _ := json.Marshal(returned)
	for _, secret := range []string{"SECRET", "whsec", "hunter2", "KEY-VALUE"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("a returned record holds %q: %s", secret, b)
		}
		if strings.Contains(e.logs.String(), secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
	if !strings.Contains(string(b), "http://x") {
		t.Error("the non-secret value is missing")
	}
	// The stored values are intact: the Run got them.
	run := fake.lastRun().Channel.Config
	if run["Password"] != "hunter2-VALUE" || run["nested"].(map[string]any)["api_key"] != "nested-KEY-VALUE" {
		t.Errorf("Run got %v", run)
	}
}

func TestMaskConfig(t *testing.T) {
	t.Parallel()
	in := map[string]any{"bot_token": "t", "API_KEY": "k", "client_secret": "s", "password": "p", "keyring": "r",
		"empty_token": "", "null_secret": nil, "url": "u", "count": 3,
		"nested": map[string]any{"token": "n", "name": "x"}, "list": []any{map[string]any{"secret": "l"}, "plain"}}
	got := agent.MaskConfig(in)
	for _, k := range []string{"bot_token", "API_KEY", "client_secret", "password", "keyring"} {
		if got[k] != agent.Mask {
			t.Errorf("%s = %v, want the mask", k, got[k])
		}
	}
	if got["empty_token"] != "" || got["null_secret"] != nil || got["url"] != "u" || got["count"] != 3 {
		t.Errorf("non-secrets or unset secrets changed: %v", got)
	}
	if n := got["nested"].(map[string]any); n["token"] != agent.Mask || n["name"] != "x" {
		t.Errorf("nested = %v", n)
	}
	if l := got["list"].([]any); l[0].(map[string]any)["secret"] != agent.Mask || l[1] != "plain" {
		t.Errorf("list = %v", l)
	}
	if in["bot_token"] != "t" || in["nested"].(map[string]any)["token"] != "n" {
		t.Error("MaskConfig changed its input")
	}
	if agent.MaskConfig(nil) != nil {
		t.Error("MaskConfig(nil) != nil")
	}
}

// storedConfig reads a channel's config as the database holds it, secrets
// in clear.
func (e *env) storedConfig(channelID string) map[string]any {
	e.t.Helper()
	var raw string
	if err := sqldb.Bun(e.db).NewRaw("SELECT config FROM agent_channels WHERE id = ?", channelID).Scan(e.ctx, &raw); err != nil {
		e.t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		e.t.Fatalf("stored config %q: %v", raw, err)
	}
	return cfg
}
