package telegram_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/gauntlet-eval/gauntlet/channels/telegram"
	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

const (
	testToken   = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	tokenSecret = "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
)

// syncBuffer is a log destination safe for concurrent writes.
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

// fakeHost is a harness.ChannelHost that records its calls. By default
// Chat answers "echo: <text>".
type fakeHost struct {
	mu     sync.Mutex
	chats  []harness.InboundMessage
	clears []string
	reply  func(ctx context.Context, msg *harness.InboundMessage) (*harness.Reply, error)
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

func (h *fakeHost) Clear(_ context.Context, userID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clears = append(h.clears, userID)
	return nil
}

func (h *fakeHost) Chats() []harness.InboundMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]harness.InboundMessage(nil), h.chats...)
}

func (h *fakeHost) Clears() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.clears...)
}

// running is a channel started by start.
type running struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returns
	err    error         // Run's result, once done is closed
	logs   *syncBuffer
}

// stop cancels the run and returns Run's result.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	return r.wait(t, 5*time.Second)
}

// wait returns Run's result once it returns.
func (r *running) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(within):
		t.Fatalf("Run did not return within %s", within)
		return nil
	}
}

func start(t *testing.T, apiURL, token string, host harness.ChannelHost, opts telegram.Options) *running {
	t.Helper()
	return startWith(t, map[string]any{"bot_token": token, "api_url": apiURL}, host, opts)
}

// startWith is start with a channel config of the test's own.
func startWith(t *testing.T, config map[string]any, host harness.ChannelHost, opts telegram.Options) *running {
	t.Helper()
	logs := &syncBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.PollTimeout == 0 {
		opts.PollTimeout = 3 * time.Second
	}
	if opts.MinPollInterval == 0 {
		opts.MinPollInterval = 50 * time.Millisecond // the failure tests poll a failing server
	}
	ch := telegram.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{}), logs: logs}
	run := &harness.ChannelRun{
		Channel: harness.ChannelConfig{
			ID: "tg1", AgentID: "helper", Type: "telegram", Name: "Helper Bot",
			Config: config,
		},
		Host: host,
	}
	go func() {
		defer close(r.done)
		r.err = ch.Run(ctx, run)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
			if r.err != nil {
				assertNoSecret(t, "Run's error", r.err.Error())
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return within 5s of cancellation")
		}
		assertNoSecret(t, "logs", logs.String())
	})
	return r
}

func assertNoSecret(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, testToken) || strings.Contains(s, tokenSecret) {
		t.Errorf("%s contain the bot token:\n%s", what, s)
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestMessageRoundTrip(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	host := &fakeHost{}
	start(t, srv.URL, testToken, host, telegram.Options{})

	srv.SendUserMessage(42, 42, "hello there")
	sent, err := srv.WaitSent(ctxTimeout(t, 5*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].ChatID != 42 || sent[0].Text != "echo: hello there" {
		t.Errorf("sent %+v, want echo to chat 42", sent[0])
	}
	chats := host.Chats()
	if len(chats) != 1 || chats[0].UserID != "telegram:42" || chats[0].Text != "hello there" {
		t.Errorf("host got %+v", chats)
	}
	if srv.Calls("sendChatAction") == 0 {
		t.Error("no typing indicator was sent")
	}
}

func TestCommands(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	host := &fakeHost{}
	start(t, srv.URL, testToken, host, telegram.Options{})
	ctx := ctxTimeout(t, 5*time.Second)

	srv.SendUserMessage(7, 7, "/start")
	sent, err := srv.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sent[0].Text, "Helper Bot") || !strings.Contains(sent[0].Text, "/clear") {
		t.Errorf("greeting %q should name the channel and mention /clear", sent[0].Text)
	}

	srv.SendUserMessage(7, 7, "/clear")
	if sent, err = srv.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := host.Clears(); len(got) != 1 || got[0] != "telegram:7" {
		t.Errorf("Clear calls %v, want [telegram:7]", got)
	}
	if !strings.Contains(strings.ToLower(sent[1].Text), "clear") {
		t.Errorf("clear confirmation %q", sent[1].Text)
	}

	// Addressed to this bot in a group: handled; to another bot: ignored.
	srv.SendUserMessage(-100, 7, "/start@other_bot")
	srv.SendUserMessage(-100, 7, "/start@"+srv.Bot().Username)
	if sent, err = srv.WaitSent(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if sent[2].ChatID != -100 || !strings.Contains(sent[2].Text, "Helper Bot") {
		t.Errorf("group greeting %+v", sent[2])
	}
	if len(host.Chats()) != 0 {
		t.Errorf("commands reached the agent: %+v", host.Chats())
	}

	// Non-text messages get a short explanation. This one goes to the
	// group too: a chat's messages are answered one at a time, in order,
	// so once its answer is sent the command for another bot has been
	// dealt with, and an answer to it would be among those already sent.
	srv.QueueUpdate(telegramtest.Update{Message: &telegramtest.Message{
		From: &telegramtest.User{ID: 7, FirstName: "U"}, Chat: telegramtest.Chat{ID: -100, Type: "group"},
		Caption: "a photo",
	}})
	harnesstest.Eventually(t, 0, "the answer to the photo", func() bool {
		return slices.ContainsFunc(srv.Sent(), func(m telegramtest.SentMessage) bool { return strings.Contains(m.Text, "only read text") })
	})
	sent = srv.Sent()
	if n := len(sent); n != 4 {
		t.Fatalf("sent %d messages, want 4 (command for another bot must be ignored): %+v", n, sent)
	}
	if sent[3].ChatID != -100 || !strings.Contains(sent[3].Text, "only read text") {
		t.Errorf("non-text answer %+v", sent[3])
	}
}

func TestLongReplyIsSplit(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()

	// ~11,000 characters: paragraphs of words, one long unbroken run, and
	// emoji that count twice in UTF-16.
	var b strings.Builder
	for i := range 120 {
		fmt.Fprintf(&b, "Paragraph %d says something about word number %d and more words follow.\n", i, i*7)
		if i%10 == 9 {
			b.WriteString("\n")
		}
	}
	b.WriteString(strings.Repeat("x", 5000))
	b.WriteString(" ")
	b.WriteString(strings.Repeat("🙂", 2500))
	long := b.String()

	const done = "that was all"
	host := &fakeHost{reply: func(_ context.Context, m *harness.InboundMessage) (*harness.Reply, error) {
		if m.Text == done {
			return &harness.Reply{Text: done}, nil
		}
		return &harness.Reply{Text: long}, nil
	}}
	start(t, srv.URL, testToken, host, telegram.Options{})
	srv.SendUserMessage(5, 5, "tell me everything")
	// A chat's messages are answered one at a time, in order: every part
	// of the long reply, and any part too many, comes before the answer
	// to a second message.
	srv.SendUserMessage(5, 5, done)
	harnesstest.Eventually(t, 0, "the answer to the second message", func() bool {
		return slices.ContainsFunc(srv.Sent(), func(m telegramtest.SentMessage) bool { return m.Text == done })
	})
	sent := srv.Sent()
	if last := sent[len(sent)-1]; last.Text != done {
		t.Fatalf("the last message sent is %q, want the answer to the second message", last.Text)
	}
	sent = sent[:len(sent)-1]

	// Only whitespace is dropped at the cuts: the parts, in order, rebuild
	// the reply.
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	var texts []string
	for _, m := range sent {
		texts = append(texts, m.Text)
	}
	if squash(strings.Join(texts, "")) != squash(long) {
		t.Errorf("parts do not rebuild the reply in order (%d parts)", len(sent))
	}
	if len(sent) != 5 {
		t.Errorf("%d parts, want 5 (about 19,300 UTF-16 units)", len(sent))
	}
	for i, m := range sent {
		if n := len(utf16.Encode([]rune(m.Text))); n > telegram.MaxMessageLength {
			t.Errorf("part %d has %d UTF-16 units", i, n)
		}
		if m.ChatID != 5 {
			t.Errorf("part %d went to chat %d", i, m.ChatID)
		}
	}
	// The first part ends at a line break, not in the middle of a line.
	if first := sent[0].Text; !strings.HasSuffix(first, "follow.") {
		t.Errorf("first part ends with %q, want a whole line", first[len(first)-20:])
	}
}

func TestUsersAreSeparate(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	host := &fakeHost{}
	start(t, srv.URL, testToken, host, telegram.Options{})

	srv.SendUserMessage(1001, 1001, "from one")
	srv.SendUserMessage(1002, 1002, "from two")
	srv.SendUserMessage(-500, 1003, "from three in a group")
	sent, err := srv.WaitSent(ctxTimeout(t, 5*time.Second), 3)
	if err != nil {
		t.Fatal(err)
	}
	byUser := map[string]string{}
	for _, c := range host.Chats() {
		byUser[c.UserID] = c.Text
	}
	want := map[string]string{"telegram:1001": "from one", "telegram:1002": "from two", "telegram:1003": "from three in a group"}
	for u, text := range want {
		if byUser[u] != text {
			t.Errorf("user %s: host got %q, want %q", u, byUser[u], text)
		}
	}
	replyTo := map[int64]string{}
	for _, m := range sent {
		replyTo[m.ChatID] = m.Text
	}
	if replyTo[1001] != "echo: from one" || replyTo[1002] != "echo: from two" || replyTo[-500] != "echo: from three in a group" {
		t.Errorf("replies went to the wrong chats: %v", replyTo)
	}
}

func TestChatRepliesKeepOrder(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	// Earlier messages take longer: replies must still come in order.
	host := &fakeHost{reply: func(_ context.Context, m *harness.InboundMessage) (*harness.Reply, error) {
		d := map[string]time.Duration{"1": 150 * time.Millisecond, "2": 50 * time.Millisecond}[m.Text]
		time.Sleep(d)
		return &harness.Reply{Text: "re " + m.Text}, nil
	}}
	start(t, srv.URL, testToken, host, telegram.Options{})
	for _, s := range []string{"1", "2", "3"} {
		srv.SendUserMessage(9, 9, s)
	}
	sent, err := srv.WaitSent(ctxTimeout(t, 5*time.Second), 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"re 1", "re 2", "re 3"} {
		if sent[i].Text != want {
			t.Errorf("reply %d = %q, want %q", i, sent[i].Text, want)
		}
	}
}

func TestChatErrorApologises(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	host := &fakeHost{reply: func(context.Context, *harness.InboundMessage) (*harness.Reply, error) {
		// Even an error quoting the token must not leak it into the logs.
		return nil, errors.New("model endpoint down (key " + testToken + ")")
	}}
	r := start(t, srv.URL, testToken, host, telegram.Options{})
	srv.SendUserMessage(3, 3, "hi")
	sent, err := srv.WaitSent(ctxTimeout(t, 5*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sent[0].Text, "Sorry") || strings.Contains(sent[0].Text, "model endpoint") {
		t.Errorf("apology %q should be short and not quote the error", sent[0].Text)
	}
	if err := r.stop(t); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	logs := r.logs.String()
	if !strings.Contains(logs, "agent chat failed") || !strings.Contains(logs, "model endpoint down") {
		t.Errorf("chat failure not logged:\n%s", logs)
	}
	assertNoSecret(t, "logs", logs)
}

func TestWrongToken(t *testing.T) {
	srv := telegramtest.NewServer("999:the-right-token-for-this-server")
	defer srv.Close()
	host := &fakeHost{}
	r := start(t, srv.URL, testToken, host, telegram.Options{})
	err := r.wait(t, 5*time.Second)
	if !errors.Is(err, telegram.ErrTokenRefused) {
		t.Fatalf("Run = %v, want ErrTokenRefused", err)
	}
	assertNoSecret(t, "error", err.Error())
	if srv.GetUpdatesCalls() != 0 {
		t.Error("polling started with a refused token")
	}
}

func TestUnreachableServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now

	r := start(t, "http://"+addr, testToken, &fakeHost{}, telegram.Options{})
	err = r.wait(t, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "getMe") {
		t.Fatalf("Run = %v, want a getMe error", err)
	}
	assertNoSecret(t, "error", err.Error())
	if !strings.Contains(err.Error(), "[REDACTED]") {
		t.Logf("error (the URL was redacted or absent): %v", err)
	}
}

func TestPollingFailuresEndRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inject func(*telegramtest.Server)
	}{
		{"bad gateway", func(s *telegramtest.Server) { s.Fail("getUpdates", 100) }},
		{"connection dropped", func(s *telegramtest.Server) { s.Drop("getUpdates", 100) }},
		{"conflict", func(s *telegramtest.Server) {
			s.FailWith("getUpdates", 100, 409, "Conflict: terminated by other getUpdates request")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := telegramtest.NewServer(testToken)
			defer srv.Close()
			tc.inject(srv)
			r := start(t, srv.URL, testToken, &fakeHost{}, telegram.Options{MaxPollFailures: 3})
			err := r.wait(t, 10*time.Second)
			if !errors.Is(err, telegram.ErrPolling) {
				t.Fatalf("Run = %v, want ErrPolling", err)
			}
			if !strings.Contains(err.Error(), "3 times in a row") {
				t.Errorf("error %q should say how often polling failed", err)
			}
			assertNoSecret(t, "error", err.Error())
			if n := srv.GetUpdatesCalls(); n != 3 {
				t.Errorf("getUpdates called %d times, want 3", n)
			}
		})
	}
}

func TestTokenRevokedWhilePolling(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	srv.FailWith("getUpdates", 1, 401, "Unauthorized")
	r := start(t, srv.URL, testToken, &fakeHost{}, telegram.Options{MaxPollFailures: 5})
	err := r.wait(t, 5*time.Second)
	if !errors.Is(err, telegram.ErrTokenRefused) {
		t.Fatalf("Run = %v, want ErrTokenRefused at once", err)
	}
	assertNoSecret(t, "error", err.Error())
}

func TestTransientPollingFailure(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	// Two failures, a success, two more: never three in a row.
	srv.Fail("getUpdates", 2)
	r := start(t, srv.URL, testToken, &fakeHost{}, telegram.Options{MaxPollFailures: 3})
	ctx := ctxTimeout(t, 10*time.Second)
	if err := srv.WaitCalls(ctx, "getUpdates", 3); err != nil {
		t.Fatal(err)
	}
	srv.SendUserMessage(4, 4, "still there?")
	if _, err := srv.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	srv.Drop("getUpdates", 2)
	srv.SendUserMessage(4, 4, "and now?")
	if _, err := srv.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
		t.Fatalf("Run returned %v after transient failures", r.err)
	default:
	}
	if err := r.stop(t); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	logs := r.logs.String()
	if !strings.Contains(logs, "telegram client error") {
		t.Errorf("polling failures were not logged:\n%s", logs)
	}
	assertNoSecret(t, "logs", logs)
}

func TestStopEndsPollingPromptly(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	r := start(t, srv.URL, testToken, &fakeHost{}, telegram.Options{PollTimeout: time.Minute})
	harnesstest.Eventually(t, 0, "a held getUpdates", func() bool { return srv.ActivePolls() == 1 })

	began := time.Now()
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("Run took %s to return after cancel", d)
	}
	calls := srv.GetUpdatesCalls()
	harnesstest.Eventually(t, 0, "the held poll to end", func() bool { return srv.ActivePolls() == 0 })
	// Only a goroutine outliving Run could poll again, and nothing would
	// mark when: watch for a while. The one poll was held (a minute's
	// timeout, no update) when Run was stopped, so no other request can be
	// on its way, and the check cannot fail wrongly on a slow machine.
	harnesstest.Never(t, 300*time.Millisecond, "a getUpdates call after Run returned", func() bool {
		return srv.GetUpdatesCalls() != calls
	})
}

func TestStopDuringChat(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	inChat := make(chan struct{})
	host := &fakeHost{reply: func(ctx context.Context, _ *harness.InboundMessage) (*harness.Reply, error) {
		close(inChat)
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	r := start(t, srv.URL, testToken, host, telegram.Options{})
	srv.SendUserMessage(8, 8, "slow question")
	select {
	case <-inChat:
	case <-time.After(5 * time.Second):
		t.Fatal("the message never reached the host")
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if sent := srv.Sent(); len(sent) != 0 {
		t.Errorf("sent %+v after stop; want nothing (no apology for a cancelled chat)", sent)
	}
}

func TestRestartResumes(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	host := &fakeHost{}
	r := start(t, srv.URL, testToken, host, telegram.Options{})
	srv.SendUserMessage(6, 6, "first")
	ctx := ctxTimeout(t, 5*time.Second)
	if _, err := srv.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	harnesstest.Eventually(t, 0, "the next poll", func() bool { return srv.ActivePolls() == 1 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	srv.SendUserMessage(6, 6, "while stopped")
	start(t, srv.URL, testToken, host, telegram.Options{})
	if _, err := srv.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// The chat's messages are answered one at a time, in order: a repeated
	// answer to an earlier message would come before the answer to this.
	srv.SendUserMessage(6, 6, "after the restart")
	harnesstest.Eventually(t, 0, "the answer to the message after the restart", func() bool {
		return slices.ContainsFunc(srv.Sent(), func(m telegramtest.SentMessage) bool { return m.Text == "echo: after the restart" })
	})
	var texts []string
	for _, m := range srv.Sent() {
		texts = append(texts, m.Text)
	}
	if want := []string{"echo: first", "echo: while stopped", "echo: after the restart"}; !slices.Equal(texts, want) {
		t.Errorf("sent %q; want %q: the waiting message answered once and nothing repeated", texts, want)
	}
}

func TestValidateChannelConfig(t *testing.T) {
	ch := telegram.New(telegram.Options{})
	for _, tc := range []struct {
		name   string
		config map[string]any
		field  string // "" when valid
	}{
		{"token only", map[string]any{"bot_token": testToken}, ""},
		{"with api_url", map[string]any{"bot_token": testToken, "api_url": "http://127.0.0.1:8081/"}, ""},
		{"empty api_url", map[string]any{"bot_token": testToken, "api_url": ""}, ""},
		{"missing token", map[string]any{}, "config.bot_token"},
		{"nil config", nil, "config.bot_token"},
		{"blank token", map[string]any{"bot_token": "  "}, "config.bot_token"},
		{"token not a string", map[string]any{"bot_token": 12345}, "config.bot_token"},
		{"token with slash", map[string]any{"bot_token": "123:abc/def"}, "config.bot_token"},
		{"token with space", map[string]any{"bot_token": "123:abc def"}, "config.bot_token"},
		{"api_url relative", map[string]any{"bot_token": testToken, "api_url": "api.example.com"}, "config.api_url"},
		{"api_url ftp", map[string]any{"bot_token": testToken, "api_url": "ftp://example.com"}, "config.api_url"},
		{"api_url not a string", map[string]any{"bot_token": testToken, "api_url": true}, "config.api_url"},
		{"show_sources", map[string]any{"bot_token": testToken, "show_sources": true}, ""},
		{"show_sources false", map[string]any{"bot_token": testToken, "show_sources": false}, ""},
		{"show_sources not a boolean", map[string]any{"bot_token": testToken, "show_sources": "yes"}, "config.show_sources"},
		{"show_sources a number", map[string]any{"bot_token": testToken, "show_sources": 1}, "config.show_sources"},
		{"unknown key", map[string]any{"bot_token": testToken, "chat_id": 7}, "config.chat_id"},
		{"key in another case", map[string]any{"bot_token": testToken, "API_URL": "http://x"}, "config.API_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ch.ValidateChannelConfig(tc.config)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			var ve *harness.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, harness.ErrInvalid) {
				t.Fatalf("got %v, want a *harness.ValidationError", err)
			}
			if len(ve.Fields) != 1 || ve.Fields[0].Field != tc.field {
				t.Errorf("fields %+v, want %s", ve.Fields, tc.field)
			}
			assertNoSecret(t, "error", err.Error())
		})
	}
}

func TestValidateChannelConfigMessages(t *testing.T) {
	ch := telegram.New(telegram.Options{})
	for _, tc := range []struct {
		config map[string]any
		want   string
	}{
		{map[string]any{}, "config.bot_token: is required"},
		{map[string]any{"bot_token": 12345}, "config.bot_token: must be a string, not a number"},
		{map[string]any{"bot_token": "1:a/b"}, "config.bot_token: must not contain spaces or the characters / ? # %"},
		{map[string]any{"bot_token": testToken, "api_url": "ftp://x"}, "config.api_url: must use http or https"},
		{map[string]any{"bot_token": testToken, "api_url": "http://x/?q"}, "config.api_url: must not have a query or fragment"},
		{map[string]any{"bot_token": testToken, "apiurl": "http://x"}, `config.apiurl: unknown setting (did you mean "api_url"?)`},
	} {
		err := ch.ValidateChannelConfig(tc.config)
		if err == nil || err.Error() != "invalid: "+tc.want {
			t.Errorf("ValidateChannelConfig(%v) = %v, want %q", tc.config, err, tc.want)
		}
	}
}

// A stored channel whose config has a key this version does not know
// still runs: only a write refuses the key.
func TestRunIgnoresUnknownKeys(t *testing.T) {
	srv := telegramtest.NewServer(testToken)
	defer srv.Close()
	cfg := map[string]any{"bot_token": testToken, "api_url": srv.URL, "from_a_newer_version": true}
	ch := telegram.New(telegram.Options{
		Logger: slog.New(slog.DiscardHandler), PollTimeout: 3 * time.Second, MinPollInterval: 50 * time.Millisecond,
	})
	if err := ch.ValidateChannelConfig(cfg); err == nil || !strings.Contains(err.Error(), "config.from_a_newer_version: unknown setting") {
		t.Errorf("ValidateChannelConfig = %v, want the unknown key refused", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ch.Run(ctx, &harness.ChannelRun{
			Channel: harness.ChannelConfig{ID: "tg1", AgentID: "helper", Type: "telegram", Config: cfg},
			Host:    &fakeHost{},
		})
	}()
	srv.SendUserMessage(42, 42, "hello")
	_, err := srv.WaitSent(ctxTimeout(t, 5*time.Second), 1)
	cancel()
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
}

func TestRunRejectsInvalidConfig(t *testing.T) {
	ch := telegram.New(telegram.Options{})
	err := ch.Run(context.Background(), &harness.ChannelRun{
		Channel: harness.ChannelConfig{ID: "x", Config: map[string]any{}},
		Host:    &fakeHost{},
	})
	if !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("Run = %v, want ErrInvalid", err)
	}
}
