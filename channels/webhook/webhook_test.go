package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

const secret = "s3cr3t-webhook-key-value"

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type fakeHost struct {
	mu    sync.Mutex
	chats []harness.InboundMessage
	reply func(ctx context.Context, msg *harness.InboundMessage) (*harness.Reply, error)
}

func (h *fakeHost) Chat(ctx context.Context, msg *harness.InboundMessage) (*harness.Reply, error) {
	h.mu.Lock()
	h.chats = append(h.chats, *msg)
	reply := h.reply
	h.mu.Unlock()
	if reply != nil {
		return reply(ctx, msg)
	}
	return &harness.Reply{Text: "echo: " + msg.Text}, nil
}

func (h *fakeHost) Clear(context.Context, string) error { return nil }

func (h *fakeHost) Chats() []harness.InboundMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]harness.InboundMessage(nil), h.chats...)
}

// newChannel returns a channel logging to a buffer that the test checks
// for the secret when it ends.
func newChannel(t *testing.T, opts webhook.Options) *webhook.Channel {
	t.Helper()
	ch, _ := newLoggedChannel(t, opts)
	return ch
}

// newLoggedChannel is newChannel that also returns the log buffer, for a
// test that waits for a log line: the channel's only sign that a
// background reply is over.
func newLoggedChannel(t *testing.T, opts webhook.Options) (*webhook.Channel, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ch := webhook.New(opts)
	channelLogs.Store(ch, logs)
	t.Cleanup(func() {
		channelLogs.Delete(ch)
		if strings.Contains(logs.String(), secret) {
			t.Errorf("logs contain the secret:\n%s", logs.String())
		}
	})
	return ch, logs
}

// channelLogs holds the log buffer of each channel newLoggedChannel made,
// for startRun: *webhook.Channel → *syncBuffer.
var channelLogs sync.Map

func channelRun(host harness.ChannelHost, config map[string]any) *harness.ChannelRun {
	return &harness.ChannelRun{
		Channel: harness.ChannelConfig{ID: "hook1", AgentID: "helper", Type: "webhook", Name: "Hook", Config: config},
		Host:    host,
	}
}

func signed(body string) *harness.InboundRequest {
	h := http.Header{}
	h.Set(webhook.SignatureHeader, webhook.Sign(secret, []byte(body)))
	return &harness.InboundRequest{Body: []byte(body), Header: h}
}

// startRun runs the channel until the test ends or stop is called, and
// returns once Run is active: a message received before that is answered
// in the background under a context of its own, which stopping Run
// neither cancels nor waits for.
func startRun(t *testing.T, ch *webhook.Channel, run *harness.ChannelRun) (stop func() error) {
	t.Helper()
	v, ok := channelLogs.Load(ch)
	if !ok {
		t.Fatal("startRun needs a channel made by newChannel")
	}
	logs := v.(*syncBuffer)
	const started = "webhook channel started"
	before := strings.Count(logs.String(), started)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, run) }()
	harnesstest.Eventually(t, 0, "Run to start", func() bool {
		return strings.Count(logs.String(), started) > before || len(done) > 0
	})
	if len(done) > 0 {
		cancel()
		t.Fatalf("Run returned at once: %v", <-done)
	}
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Error("Run did not return within 5s of cancellation")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func body(t *testing.T, resp *harness.InboundResponse) map[string]any {
	t.Helper()
	raw, err := json.Marshal(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSignAndVerify(t *testing.T) {
	b := []byte(`{"user_id":"u","message":"hi"}`)
	sig := webhook.Sign(secret, b)
	// Known answer: HMAC-SHA256 from the standard's test case 2.
	if got := webhook.Sign("Jefe", []byte("what do ya want for nothing?")); got != "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" {
		t.Errorf("Sign = %s", got)
	}
	for _, tc := range []struct {
		name, secret, sig string
		body              []byte
		want              bool
	}{
		{"good", secret, sig, b, true},
		{"upper-case", secret, strings.ToUpper(sig), b, true},
		{"spaces", secret, " " + sig + " ", b, true},
		{"other body", secret, sig, []byte(`{"user_id":"u","message":"hi!"}`), false},
		{"other secret", "other", sig, b, false},
		{"no prefix", secret, strings.TrimPrefix(sig, "sha256="), b, false},
		{"other algorithm", secret, "sha1=" + strings.TrimPrefix(sig, "sha256="), b, false},
		{"not hex", secret, "sha256=zz", b, false},
		{"truncated", secret, sig[:len(sig)-2], b, false},
		{"empty", secret, "", b, false},
		{"empty secret", "", webhook.Sign("", b), b, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := webhook.Verify(tc.secret, tc.body, tc.sig); got != tc.want {
				t.Errorf("Verify = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReceiveReply(t *testing.T) {
	ch := newChannel(t, webhook.Options{})
	host := &fakeHost{}
	run := channelRun(host, map[string]any{"secret": secret})
	startRun(t, ch, run)

	resp, err := ch.Receive(context.Background(), run, signed(`{"user_id":"alice","message":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 {
		t.Errorf("status %d", resp.Status)
	}
	if b := body(t, resp); b["success"] != true || b["response"] != "echo: hello" || fmt.Sprint(b["sources"]) != "[]" {
		t.Errorf("body %v, want success, the response and no sources ([])", b)
	}
	// A numeric user id is taken as its digits.
	if _, err := ch.Receive(context.Background(), run, signed(`{"user_id":42,"message":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	chats := host.Chats()
	if len(chats) != 2 || chats[0] != (harness.InboundMessage{UserID: "alice", Text: "hello"}) || chats[1].UserID != "42" {
		t.Errorf("host got %+v", chats)
	}
}

// A stored channel whose config has a key this version does not know
// still works: only a write refuses the key.
func TestReceiveIgnoresUnknownKeys(t *testing.T) {
	ch := newChannel(t, webhook.Options{})
	cfg := map[string]any{"secret": secret, "from_a_newer_version": true}
	if err := ch.ValidateChannelConfig(cfg); err == nil || !strings.Contains(err.Error(), "config.from_a_newer_version: unknown setting") {
		t.Errorf("ValidateChannelConfig = %v, want the unknown key refused", err)
	}
	run := channelRun(&fakeHost{}, cfg)
	startRun(t, ch, run)
	resp, err := ch.Receive(context.Background(), run, signed(`{"user_id":"alice","message":"hello"}`))
	if err != nil || resp.Status != 200 {
		t.Fatalf("Receive = %+v, %v", resp, err)
	}
}

func TestReceiveUnauthorized(t *testing.T) {
	ch := newChannel(t, webhook.Options{})
	host := &fakeHost{}
	run := channelRun(host, map[string]any{"secret": secret})
	const b = `{"user_id":"alice","message":"hello"}`
	for _, tc := range []struct {
		name string
		req  *harness.InboundRequest
		run  *harness.ChannelRun
	}{
		{"missing", &harness.InboundRequest{Body: []byte(b), Header: http.Header{}}, run},
		{"nil header", &harness.InboundRequest{Body: []byte(b)}, run},
		{"wrong secret", &harness.InboundRequest{Body: []byte(b), Header: http.Header{
			webhook.SignatureHeader: {webhook.Sign("guess", []byte(b))}}}, run},
		{"body changed", &harness.InboundRequest{Body: []byte(b + " "), Header: signed(b).Header}, run},
		{"garbage", &harness.InboundRequest{Body: []byte(b), Header: http.Header{webhook.SignatureHeader: {"sha256=nope"}}}, run},
		{"channel without secret", signed(b), channelRun(host, map[string]any{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := ch.Receive(context.Background(), tc.run, tc.req)
			if !errors.Is(err, harness.ErrUnauthorized) || resp != nil {
				t.Fatalf("Receive = %v, %v; want ErrUnauthorized", resp, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q holds the secret", err)
			}
		})
	}
	if len(host.Chats()) != 0 {
		t.Errorf("unauthorized requests reached the agent: %+v", host.Chats())
	}
}

func TestReceiveInvalidBody(t *testing.T) {
	ch := newChannel(t, webhook.Options{})
	host := &fakeHost{}
	run := channelRun(host, map[string]any{"secret": secret})
	for _, tc := range []struct {
		name, body string
		fields     []string
	}{
		{"not json", `hello`, []string{"body"}},
		{"array", `[1,2]`, []string{"body"}},
		{"two objects", `{"user_id":"a","message":"b"} {}`, []string{"body"}},
		{"empty object", `{}`, []string{"user_id", "message"}},
		{"null", `null`, []string{"user_id", "message"}},
		{"empty user", `{"user_id":"","message":"hi"}`, []string{"user_id"}},
		{"blank message", `{"user_id":"a","message":"  "}`, []string{"message"}},
		{"message not a string", `{"user_id":"a","message":5}`, []string{"message"}},
		{"user an object", `{"user_id":{},"message":"hi"}`, []string{"user_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ch.Receive(context.Background(), run, signed(tc.body))
			var ve *harness.ValidationError
			if !errors.Is(err, harness.ErrInvalid) || !errors.As(err, &ve) {
				t.Fatalf("Receive = %v, want a validation error", err)
			}
			var got []string
			for _, f := range ve.Fields {
				got = append(got, f.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("fields %v, want %v", got, tc.fields)
			}
		})
	}
	if len(host.Chats()) != 0 {
		t.Errorf("invalid requests reached the agent")
	}
}

func TestReceiveChatError(t *testing.T) {
	ch := newChannel(t, webhook.Options{})
	host := &fakeHost{reply: func(_ context.Context, m *harness.InboundMessage) (*harness.Reply, error) {
		if m.Text == "too long" {
			return nil, harness.Invalid("message", "is too long")
		}
		return nil, errors.New("model endpoint unreachable")
	}}
	run := channelRun(host, map[string]any{"secret": secret})
	resp, err := ch.Receive(context.Background(), run, signed(`{"user_id":"a","message":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, resp); resp.Status != http.StatusBadGateway || b["success"] != false || b["error"] != "model endpoint unreachable" {
		t.Errorf("got %d %v", resp.Status, b)
	}
	// The agent's own validation errors keep their meaning (422).
	_, err = ch.Receive(context.Background(), run, signed(`{"user_id":"a","message":"too long"}`))
	if !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("Receive = %v, want ErrInvalid", err)
	}
}

// callbackServer records the callbacks it receives; fail answers the
// first ones with a status.
type callbackServer struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   [][]byte
	sigs     []string
	attempts atomic.Int32
	got      chan struct{}
}

func newCallbackServer(t *testing.T, fail func(attempt int) int) *callbackServer {
	cs := &callbackServer{got: make(chan struct{}, 100)}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(cs.attempts.Add(1))
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("callback %s with %q", r.Method, r.Header.Get("Content-Type"))
		}
		if fail != nil {
			if status := fail(n); status != 0 {
				w.WriteHeader(status)
				return
			}
		}
		cs.mu.Lock()
		cs.bodies = append(cs.bodies, b)
		cs.sigs = append(cs.sigs, r.Header.Get(webhook.SignatureHeader))
		cs.mu.Unlock()
		cs.got <- struct{}{}
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *callbackServer) wait(t *testing.T) (webhook.Callback, []byte, string) {
	t.Helper()
	select {
	case <-cs.got:
	case <-time.After(5 * time.Second):
		t.Fatal("no callback received")
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	b, sig := cs.bodies[len(cs.bodies)-1], cs.sigs[len(cs.sigs)-1]
	var cb webhook.Callback
	if err := json.Unmarshal(b, &cb); err != nil {
		t.Fatal(err)
	}
	return cb, b, sig
}

func TestCallback(t *testing.T) {
	cs := newCallbackServer(t, nil)
	ch := newChannel(t, webhook.Options{})
	host := &fakeHost{}
	run := channelRun(host, map[string]any{"secret": secret, "callback_url": cs.URL + "/hook?token=abc"})
	startRun(t, ch, run)

	resp, err := ch.Receive(context.Background(), run, signed(`{"user_id":"bob","message":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	b := body(t, resp)
	if resp.Status != http.StatusAccepted || b["success"] != true || b["queued"] != true || b["request_id"] == "" {
		t.Fatalf("got %d %v", resp.Status, b)
	}
	cb, raw, sig := cs.wait(t)
	if !webhook.Verify(secret, raw, sig) {
		t.Errorf("callback signature %q does not verify", sig)
	}
	want := webhook.Callback{ChannelID: "hook1", RequestID: b["request_id"].(string), UserID: "bob", Success: true, Response: "echo: ping",
		Sources: []harness.Source{}}
	if !reflect.DeepEqual(cb, want) {
		t.Errorf("callback %+v, want %+v", cb, want)
	}
}

func TestCallbackChatError(t *testing.T) {
	cs := newCallbackServer(t, nil)
	ch := newChannel(t, webhook.Options{})
	host := &fakeHost{reply: func(context.Context, *harness.InboundMessage) (*harness.Reply, error) {
		return nil, errors.New("model endpoint unreachable")
	}}
	run := channelRun(host, map[string]any{"secret": secret, "callback_url": cs.URL})
	startRun(t, ch, run)
	if _, err := ch.Receive(context.Background(), run, signed(`{"user_id":"bob","message":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	cb, _, _ := cs.wait(t)
	if cb.Success || cb.Error != "model endpoint unreachable" || cb.Response != "" || cb.UserID != "bob" {
		t.Errorf("callback %+v", cb)
	}
}

func TestCallbackRetries(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		cs := newCallbackServer(t, func(n int) int {
			if n <= 2 {
				return http.StatusServiceUnavailable
			}
			return 0
		})
		ch := newChannel(t, webhook.Options{RetryDelay: 10 * time.Millisecond})
		run := channelRun(&fakeHost{}, map[string]any{"secret": secret, "callback_url": cs.URL})
		startRun(t, ch, run)
		if _, err := ch.Receive(context.Background(), run, signed(`{"user_id":"u","message":"m"}`)); err != nil {
			t.Fatal(err)
		}
		if cb, _, _ := cs.wait(t); cb.Response != "echo: m" {
			t.Errorf("callback %+v", cb)
		}
		if n := cs.attempts.Load(); n != 3 {
			t.Errorf("%d attempts, want 3", n)
		}
	})
	// The channel logs "webhook callback failed" when it gives up, and
	// makes no attempt after it: once the line is there, the count of
	// attempts is final, and no window is needed to show there is no
	// extra one.
	gaveUp := func(t *testing.T, logs *syncBuffer) {
		t.Helper()
		harnesstest.Eventually(t, 0, "the callback to be given up", func() bool {
			return strings.Contains(logs.String(), "webhook callback failed")
		})
	}
	t.Run("gives up", func(t *testing.T) {
		cs := newCallbackServer(t, func(int) int { return http.StatusBadGateway })
		ch, logs := newLoggedChannel(t, webhook.Options{RetryDelay: 10 * time.Millisecond, CallbackRetries: 3})
		run := channelRun(&fakeHost{}, map[string]any{"secret": secret, "callback_url": cs.URL})
		stop := startRun(t, ch, run)
		if _, err := ch.Receive(context.Background(), run, signed(`{"user_id":"u","message":"m"}`)); err != nil {
			t.Fatal(err)
		}
		gaveUp(t, logs)
		if n := cs.attempts.Load(); n != 4 {
			t.Errorf("%d attempts, want 4", n)
		}
		if !strings.Contains(logs.String(), "attempts=4") {
			t.Errorf("the failure is not logged with its 4 attempts:\n%s", logs)
		}
		_ = stop()
	})
	t.Run("refused is not retried", func(t *testing.T) {
		cs := newCallbackServer(t, func(int) int { return http.StatusBadRequest })
		ch, logs := newLoggedChannel(t, webhook.Options{RetryDelay: 10 * time.Millisecond})
		run := channelRun(&fakeHost{}, map[string]any{"secret": secret, "callback_url": cs.URL})
		startRun(t, ch, run)
		if _, err := ch.Receive(context.Background(), run, signed(`{"user_id":"u","message":"m"}`)); err != nil {
			t.Fatal(err)
		}
		gaveUp(t, logs)
		if n := cs.attempts.Load(); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		var attempts atomic.Int32
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			attempts.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer slow.Close()
		defer close(release)
		ch := newChannel(t, webhook.Options{CallbackTimeout: 50 * time.Millisecond, RetryDelay: 10 * time.Millisecond, CallbackRetries: 1})
		run := channelRun(&fakeHost{}, map[string]any{"secret": secret, "callback_url": slow.URL})
		stop := startRun(t, ch, run)
		if _, err := ch.Receive(context.Background(), run, signed(`{"user_id":"u","message":"m"}`)); err != nil {
			t.Fatal(err)
		}
		harnesstest.Eventually(t, 0, "2 callback attempts", func() bool { return attempts.Load() == 2 })
		_ = stop()
	})
}

func TestStopCancelsPendingReplies(t *testing.T) {
	cs := newCallbackServer(t, nil)
	inChat := make(chan struct{})
	host := &fakeHost{reply: func(ctx context.Context, _ *harness.InboundMessage) (*harness.Reply, error) {
		close(inChat)
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	ch, logs := newLoggedChannel(t, webhook.Options{})
	run := channelRun(host, map[string]any{"secret": secret, "callback_url": cs.URL})
	stop := startRun(t, ch, run)
	reqCtx, cancelReq := context.WithCancel(context.Background())
	if _, err := ch.Receive(reqCtx, run, signed(`{"user_id":"u","message":"m"}`)); err != nil {
		t.Fatal(err)
	}
	cancelReq() // the HTTP request is over; the reply goes on
	<-inChat
	began := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("Run took %s to stop", d)
	}
	// Run waits for the replies in progress: the reply has already seen
	// the stop and ended without a callback, so nothing can come later.
	if !strings.Contains(logs.String(), "webhook reply dropped: channel stopped") {
		t.Errorf("the reply in progress had not ended when Run returned:\n%s", logs)
	}
	if n := cs.attempts.Load(); n != 0 {
		t.Errorf("%d callbacks after stop", n)
	}
}

func TestMaxPending(t *testing.T) {
	cs := newCallbackServer(t, nil)
	release := make(chan struct{})
	host := &fakeHost{reply: func(context.Context, *harness.InboundMessage) (*harness.Reply, error) {
		<-release
		return &harness.Reply{Text: "late"}, nil
	}}
	ch := newChannel(t, webhook.Options{MaxPending: 2})
	run := channelRun(host, map[string]any{"secret": secret, "callback_url": cs.URL})
	startRun(t, ch, run)
	for i := range 3 {
		resp, err := ch.Receive(context.Background(), run, signed(`{"user_id":"u","message":"m"}`))
		if err != nil {
			t.Fatal(err)
		}
		want := http.StatusAccepted
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if resp.Status != want {
			t.Errorf("request %d: status %d, want %d", i, resp.Status, want)
		}
	}
	close(release)
	cs.wait(t)
	cs.wait(t)
}

func TestRun(t *testing.T) {
	ch := newChannel(t, webhook.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, channelRun(&fakeHost{}, map[string]any{"secret": secret})) }()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v before cancellation", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Run did not return after cancellation")
	}

	err := ch.Run(context.Background(), channelRun(&fakeHost{}, map[string]any{"secret": ""}))
	if !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("Run with an empty secret = %v, want ErrInvalid", err)
	}
}

func TestValidateChannelConfig(t *testing.T) {
	ch := webhook.New(webhook.Options{})
	for _, tc := range []struct {
		name   string
		config map[string]any
		fields []string
	}{
		{"secret", map[string]any{"secret": "x"}, nil},
		{"https callback", map[string]any{"secret": "x", "callback_url": "https://example.com/hook"}, nil},
		{"empty callback", map[string]any{"secret": "x", "callback_url": ""}, nil},
		{"nil", nil, []string{"config.secret"}},
		{"empty secret", map[string]any{"secret": ""}, []string{"config.secret"}},
		{"secret not a string", map[string]any{"secret": 7}, []string{"config.secret"}},
		{"relative callback", map[string]any{"secret": "x", "callback_url": "/hook"}, []string{"config.callback_url"}},
		{"ftp callback", map[string]any{"secret": "x", "callback_url": "ftp://example.com/"}, []string{"config.callback_url"}},
		{"callback not a string", map[string]any{"secret": "x", "callback_url": 1}, []string{"config.callback_url"}},
		{"both", map[string]any{"callback_url": "nope"}, []string{"config.secret", "config.callback_url"}},
		{"unknown key", map[string]any{"secret": "x", "callback": "https://example.com/"}, []string{"config.callback"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ch.ValidateChannelConfig(tc.config)
			if tc.fields == nil {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			var ve *harness.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, harness.ErrInvalid) {
				t.Fatalf("got %v, want a validation error", err)
			}
			var got []string
			for _, f := range ve.Fields {
				got = append(got, f.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("fields %v, want %v", got, tc.fields)
			}
		})
	}
}

func TestValidateChannelConfigMessages(t *testing.T) {
	ch := webhook.New(webhook.Options{})
	for _, tc := range []struct {
		config map[string]any
		want   string
	}{
		{map[string]any{}, "config.secret: is required"},
		{map[string]any{"secret": 7}, "config.secret: must be a string, not a number"},
		{map[string]any{"secret": "x", "callback_url": "/hook"}, "config.callback_url: must be an absolute http or https URL"},
		{map[string]any{"secret": "x", "callback_url": "ftp://example.com/"}, "config.callback_url: must use http or https"},
		{map[string]any{"secret": "x", "callback": "https://example.com/"}, `config.callback: unknown setting (did you mean "callback_url"?)`},
	} {
		err := ch.ValidateChannelConfig(tc.config)
		if err == nil || err.Error() != "invalid: "+tc.want {
			t.Errorf("ValidateChannelConfig(%v) = %v, want %q", tc.config, err, tc.want)
		}
	}
}

// sourcedHost answers with a reply that has sources, as an agent with a
// knowledge base does.
func sourcedHost() *fakeHost {
	return &fakeHost{reply: func(_ context.Context, m *harness.InboundMessage) (*harness.Reply, error) {
		return &harness.Reply{Text: "from the docs: " + m.Text, Sources: []harness.Source{{File: "faq.md", Chunk: 1, Score: 2.5}, {File: "guide.pdf", Chunk: 0, Score: 1}}}, nil
	}}
}

func TestReplySources(t *testing.T) {
	want := `[{"chunk":1,"file":"faq.md","score":2.5},{"chunk":0,"file":"guide.pdf","score":1}]`
	t.Run("in the response", func(t *testing.T) {
		ch := newChannel(t, webhook.Options{})
		run := channelRun(sourcedHost(), map[string]any{"secret": secret})
		startRun(t, ch, run)
		resp, err := ch.Receive(context.Background(), run, signed(`{"user_id":"alice","message":"hours?"}`))
		if err != nil {
			t.Fatal(err)
		}
		b := body(t, resp)
		got, _ := json.Marshal(b["sources"])
		if resp.Status != http.StatusOK || b["response"] != "from the docs: hours?" || string(got) != want {
			t.Errorf("got %d %v; want the sources %s", resp.Status, b, want)
		}
	})
	t.Run("in the callback", func(t *testing.T) {
		cs := newCallbackServer(t, nil)
		ch := newChannel(t, webhook.Options{})
		run := channelRun(sourcedHost(), map[string]any{"secret": secret, "callback_url": cs.URL})
		startRun(t, ch, run)
		if _, err := ch.Receive(context.Background(), run, signed(`{"user_id":"bob","message":"hours?"}`)); err != nil {
			t.Fatal(err)
		}
		cb, raw, _ := cs.wait(t)
		var m map[string]any
		json.Unmarshal(raw, &m)
		got, _ := json.Marshal(m["sources"])
		if string(got) != want || len(cb.Sources) != 2 || cb.Sources[0].File != "faq.md" {
			t.Errorf("callback %s; want the sources %s", raw, want)
		}
	})
	t.Run("not on failure", func(t *testing.T) {
		ch := newChannel(t, webhook.Options{})
		host := &fakeHost{reply: func(context.Context, *harness.InboundMessage) (*harness.Reply, error) {
			return nil, errors.New("model down")
		}}
		run := channelRun(host, map[string]any{"secret": secret})
		startRun(t, ch, run)
		resp, err := ch.Receive(context.Background(), run, signed(`{"user_id":"alice","message":"hours?"}`))
		if err != nil {
			t.Fatal(err)
		}
		if b := body(t, resp); resp.Status != http.StatusBadGateway || b["sources"] != nil {
			t.Errorf("got %d %v", resp.Status, b)
		}
	})
}
