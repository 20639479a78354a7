package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Texts the channel sends on its own behalf.
const (
	greetingFormat  = "Hello! I'm %s. Send me a message and I'll answer. Send /clear to start a new conversation."
	clearedText     = "Done: our conversation is cleared. Let's start over!"
	clearFailedText = "Sorry, I couldn't clear our conversation just now. Please try again in a moment."
	apologyText     = "Sorry, I couldn't answer that just now. Please try again in a moment."
	notTextText     = "Sorry, I can only read text messages."
	emptyReplyText  = "(no answer)"
)

const (
	// maxQueuedPerChat bounds the messages of one chat waiting for an
	// answer; more are dropped (and logged) rather than piling up.
	maxQueuedPerChat = 50
	// maxSendAttempts bounds retries of sendMessage answered 429.
	maxSendAttempts = 3
	maxRetryAfter   = 30 * time.Second
)

// runner is the state of one Run call.
type runner struct {
	ch   harness.ChannelConfig
	host harness.ChannelHost
	// agentName is the name of the agent the bot speaks for.
	agentName string
	cfg       config
	log       *slog.Logger
	red       redactor
	watch     *pollWatch
	bot       *bot.Bot
	me        *models.User

	pollTimeout time.Duration

	mu     sync.Mutex
	queues map[int64][]*models.Message // per chat; present while a worker runs
	wg     sync.WaitGroup              // chat workers
}

func newRunner(c *Channel, run *harness.ChannelRun, cfg config) *runner {
	r := &runner{
		ch:          run.Channel,
		host:        run.Host,
		agentName:   run.AgentName,
		cfg:         cfg,
		log:         c.log.With(channelAttrs(run.Channel)...),
		red:         newRedactor(cfg.token),
		pollTimeout: c.pollTimeout,
		queues:      map[int64][]*models.Message{},
	}
	r.watch = &pollWatch{next: c.client, max: c.maxPollFailures, red: r.red, fatal: make(chan error, 1),
		minGap: c.minPollInterval}
	return r
}

func (r *runner) run(ctx context.Context) error {
	b, err := bot.New(r.cfg.token,
		bot.WithServerURL(r.cfg.apiURL),
		bot.WithSkipGetMe(), // checked below, with ctx
		bot.WithHTTPClient(r.pollTimeout, r.watch),
		bot.WithErrorsHandler(r.clientError),
		bot.WithDebugHandler(r.clientDebug),
		bot.WithDefaultHandler(r.onUpdate),
		bot.WithNotAsyncHandlers(), // onUpdate only queues; order is kept per chat
		bot.WithAllowedUpdates(bot.AllowedUpdates{"message"}),
	)
	if err != nil {
		return fmt.Errorf("telegram: %w", r.red.Error(err))
	}
	r.bot = b

	meCtx, cancel := context.WithTimeout(ctx, getMeTimeout)
	me, err := b.GetMe(meCtx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return r.getMeError(err)
	}
	r.me = me
	r.log.Info("telegram channel started", "bot_username", me.Username, "bot_id", me.ID)

	pollCtx, stop := context.WithCancel(ctx)
	defer stop()
	polling := make(chan struct{})
	go func() {
		defer close(polling)
		b.Start(pollCtx)
	}()

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-r.watch.fatal:
	}
	stop()
	<-polling   // no getUpdates call is in flight or will start
	r.wg.Wait() // answers in progress saw pollCtx end
	if ctx.Err() != nil {
		r.log.Info("telegram channel stopped")
		return nil
	}
	r.log.Error("telegram channel failed", "error", runErr.Error())
	return runErr
}

func (r *runner) getMeError(err error) error {
	switch {
	case errors.Is(err, bot.ErrorUnauthorized):
		return fmt.Errorf("%w: getMe answered 401 Unauthorized; check config.bot_token", ErrTokenRefused)
	case errors.Is(err, bot.ErrorNotFound):
		return fmt.Errorf("%w: getMe answered 404 Not Found; check config.bot_token and config.api_url", ErrTokenRefused)
	default:
		return fmt.Errorf("telegram getMe: %s", r.red.describe(err))
	}
}

// clientError receives what the client library reports, such as a failed
// getUpdates call (whose text may hold the request URL, with the token).
func (r *runner) clientError(err error) {
	r.log.Warn("telegram client error", "error", r.red.describe(err))
}

func (r *runner) clientDebug(format string, args ...any) {
	r.log.Debug("telegram client", "detail", r.red.String(fmt.Sprintf(format, args...)))
}

// onUpdate runs in the client library's worker, in update order; it only
// queues the message for its chat's worker.
func (r *runner) onUpdate(ctx context.Context, _ *bot.Bot, upd *models.Update) {
	msg := upd.Message
	if msg == nil || msg.From == nil || msg.From.IsBot {
		return
	}
	chat := msg.Chat.ID
	r.mu.Lock()
	defer r.mu.Unlock()
	q, busy := r.queues[chat]
	if len(q) >= maxQueuedPerChat {
		r.log.Warn("telegram message dropped: too many waiting in this chat",
			"chat_id", chat, "user_id", fmtUserID(msg.From.ID))
		return
	}
	r.queues[chat] = append(q, msg)
	if !busy {
		r.wg.Add(1)
		go r.drain(ctx, chat)
	}
}

// drain answers a chat's queued messages one at a time, then exits.
func (r *runner) drain(ctx context.Context, chat int64) {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		q := r.queues[chat]
		if len(q) == 0 || ctx.Err() != nil {
			delete(r.queues, chat)
			r.mu.Unlock()
			return
		}
		msg := q[0]
		r.queues[chat] = q[1:]
		r.mu.Unlock()
		r.handle(ctx, msg)
	}
}

func (r *runner) handle(ctx context.Context, msg *models.Message) {
	userID := fmtUserID(msg.From.ID)
	chat := msg.Chat.ID
	log := r.log.With("user_id", userID, "chat_id", chat)
	defer func() {
		if p := recover(); p != nil {
			log.Error("telegram message handler panicked", "panic", r.red.String(fmt.Sprint(p)))
		}
	}()

	if msg.Text == "" {
		r.send(ctx, log, chat, notTextText)
		return
	}
	cmd, isCmd := parseCommand(msg.Text, r.me.Username)
	switch {
	case isCmd && cmd == cmdOtherBot:
		return
	case isCmd && (cmd == "start" || cmd == "help"):
		r.send(ctx, log, chat, fmt.Sprintf(greetingFormat, r.displayName()))
		return
	case isCmd && cmd == "clear":
		if err := r.host.Clear(ctx, userID); err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("clearing the conversation failed", "error", r.red.describe(err))
			r.send(ctx, log, chat, clearFailedText)
			return
		}
		log.Info("conversation cleared")
		r.send(ctx, log, chat, clearedText)
		return
	}

	log.Debug("telegram message received", "length", len(msg.Text))
	r.typing(ctx, log, chat)
	reply, err := r.host.Chat(ctx, &harness.InboundMessage{UserID: userID, Text: msg.Text})
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		log.Warn("agent chat failed", "error", r.red.describe(err))
		r.send(ctx, log, chat, apologyText)
		return
	}
	text := ""
	if reply != nil {
		text = reply.Text
	}
	if strings.TrimSpace(text) == "" {
		text = emptyReplyText
	}
	if r.cfg.showSources && reply != nil {
		if line := SourcesLine(reply.Sources); line != "" {
			text += "\n\n" + line
		}
	}
	for _, part := range splitText(text, MaxMessageLength) {
		if !r.send(ctx, log, chat, part) {
			return
		}
	}
}

// displayName is the name the bot introduces itself by: the agent's, else
// the channel's, else the bot's own.
func (r *runner) displayName() string {
	switch {
	case r.agentName != "":
		return r.agentName
	case r.ch.Name != "":
		return r.ch.Name
	case r.me != nil && r.me.FirstName != "":
		return r.me.FirstName
	default:
		return r.ch.ID
	}
}

// send sends one message, waiting and retrying when Telegram answers 429,
// and reports whether it was delivered.
func (r *runner) send(ctx context.Context, log *slog.Logger, chat int64, text string) bool {
	for attempt := 1; ; attempt++ {
		_, err := r.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: text})
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		var tooMany *bot.TooManyRequestsError
		if errors.As(err, &tooMany) && attempt < maxSendAttempts {
			wait := min(max(time.Duration(tooMany.RetryAfter)*time.Second, time.Second), maxRetryAfter)
			select {
			case <-ctx.Done():
				return false
			case <-time.After(wait):
				continue
			}
		}
		log.Warn("telegram sendMessage failed", "error", r.red.describe(err))
		return false
	}
}

// typing shows "typing…" in the chat while the agent works; failures only
// matter to debugging.
func (r *runner) typing(ctx context.Context, log *slog.Logger, chat int64) {
	_, err := r.bot.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chat, Action: models.ChatActionTyping})
	if err != nil && ctx.Err() == nil {
		log.Debug("telegram sendChatAction failed", "error", r.red.describe(err))
	}
}

// cmdOtherBot is what parseCommand returns for a command addressed to
// another bot, such as /start@other_bot in a group.
const cmdOtherBot = "\x00other"

// parseCommand reports whether text is a bot command and returns its name
// in lower case, without the slash and the @bot suffix.
func parseCommand(text, botUsername string) (string, bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") {
		return "", false
	}
	word := strings.Fields(text)[0][1:]
	name, target, addressed := strings.Cut(word, "@")
	if name == "" {
		return "", false
	}
	if addressed && !strings.EqualFold(target, botUsername) {
		return cmdOtherBot, true
	}
	return strings.ToLower(name), true
}

// pollWatch is the HTTP client the bot uses. It passes every call on and
// watches getUpdates: when it fails max times in a row (an error, or an
// answer other than 200), or the token is refused, it sends the reason on
// fatal, once. The client library itself retries forever, with back-off.
type pollWatch struct {
	next  bot.HttpClient
	max   int
	red   redactor
	fatal chan error
	// minGap is the least time between the starts of two getUpdates calls
	// when the first came back empty or failed.
	minGap time.Duration

	mu       sync.Mutex
	failures int
	done     bool
	notUntil time.Time // no getUpdates call starts before then
}

// Do passes req on, and records the outcome when it is a getUpdates call.
// A getUpdates call that came back empty or failed makes the next one wait
// until minGap after its start: the client library polls again at once.
func (w *pollWatch) Do(req *http.Request) (*http.Response, error) {
	isPoll := strings.EqualFold(path.Base(req.URL.Path), "getUpdates")
	if !isPoll {
		return w.next.Do(req)
	}
	w.mu.Lock()
	wait := time.Until(w.notUntil)
	w.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
			return nil, req.Context().Err()
		}
	}
	start := time.Now()
	resp, err := w.next.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK || w.empty(resp) {
		w.mu.Lock()
		w.notUntil = start.Add(w.minGap)
		w.mu.Unlock()
	}
	if err != nil {
		if req.Context().Err() == nil {
			w.failed(errors.New("getUpdates: "+w.red.describe(err)), false)
		}
		return resp, err
	}
	if resp.StatusCode == http.StatusOK {
		w.succeeded()
		return resp, nil
	}
	// Read the error answer to report it, and hand the client a copy.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var answer struct {
		Description string `json:"description"`
	}
	_ = json.Unmarshal(body, &answer)
	desc := answer.Description
	if desc == "" {
		desc = http.StatusText(resp.StatusCode)
	}
	what := fmt.Sprintf("getUpdates answered %d %s", resp.StatusCode, w.red.String(desc))
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusNotFound:
		// The token was revoked while running: retrying cannot help.
		w.failed(fmt.Errorf("%w: %s", ErrTokenRefused, what), true)
	default:
		w.failed(errors.New(what), false)
	}
	return resp, nil
}

// empty reports whether a 200 getUpdates answer holds no update. It reads
// the body and hands the client a copy; a body that does not parse counts
// as not empty (the client reports it).
func (w *pollWatch) empty(resp *http.Response) bool {
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var answer struct {
		OK     bool              `json:"ok"`
		Result []json.RawMessage `json:"result"`
	}
	return json.Unmarshal(body, &answer) == nil && answer.OK && len(answer.Result) == 0
}

func (w *pollWatch) succeeded() {
	w.mu.Lock()
	w.failures = 0
	w.mu.Unlock()
}

func (w *pollWatch) failed(err error, fatal bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures++
	if w.done || (!fatal && w.failures < w.max) {
		return
	}
	w.done = true
	if !fatal {
		err = fmt.Errorf("%w %d times in a row: %w", ErrPolling, w.failures, err)
	}
	w.fatal <- err // buffered, sent once
}
