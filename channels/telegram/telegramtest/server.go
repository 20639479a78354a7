// Package telegramtest provides a fake Telegram Bot API server for tests.
//
// The server listens on loopback, like net/http/httptest, and speaks the
// real wire format: every call is a GET or POST to
// {URL}/bot{token}/{method}, with parameters in the query string or in a
// JSON, application/x-www-form-urlencoded or multipart/form-data body, and
// every answer is {"ok":true,"result":…} or
// {"ok":false,"error_code":…,"description":…} with the matching HTTP status.
// A wrong token is answered 401 Unauthorized, an unknown method 404 Not
// Found, as Telegram does.
//
// Supported methods: getMe, getUpdates (long polling with offset, limit and
// timeout; an offset confirms, and so forgets, every earlier update; a new
// getUpdates call ends one still waiting with 409 Conflict, as Telegram
// does when two bot instances poll at once), sendMessage (recorded; text
// longer than 4,096 characters or empty is refused with 400 as Telegram
// does), sendChatAction, deleteWebhook.
//
// A test queues user messages with SendUserMessage, reads what the bot
// sent with Sent or WaitSent, counts calls with Calls, and injects
// failures with Fail, FailWith and Drop. Update and message ids are
// assigned in sequence from 1, so a test sees the same ids on every run.
// All methods are safe for concurrent use.
package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
)

// MaxMessageLength is the longest text sendMessage accepts, in UTF-16 code
// units, as Telegram counts it.
const MaxMessageLength = 4096

// User is a Telegram user or bot, as the Bot API encodes it.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Chat is a Telegram chat: "private" for a one-to-one chat with a user,
// "group" or "supergroup" otherwise.
type Chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// MessageEntity marks a special span of a message's text, such as a
// bot_command. Offset and Length count UTF-16 code units.
type MessageEntity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

// Message is a Telegram message.
type Message struct {
	MessageID int64           `json:"message_id"`
	From      *User           `json:"from,omitempty"`
	Chat      Chat            `json:"chat"`
	Date      int64           `json:"date"`
	Text      string          `json:"text,omitempty"`
	Entities  []MessageEntity `json:"entities,omitempty"`
	// Caption and Photo let a test send a message without text.
	Caption string            `json:"caption,omitempty"`
	Photo   []json.RawMessage `json:"photo,omitempty"`
}

// Update is one incoming update, as getUpdates returns it.
type Update struct {
	UpdateID      int64    `json:"update_id"`
	Message       *Message `json:"message,omitempty"`
	EditedMessage *Message `json:"edited_message,omitempty"`
}

// SentMessage is a message the bot sent with sendMessage.
type SentMessage struct {
	MessageID int64  // the id the server gave the message
	ChatID    int64  // the chat_id parameter
	Text      string // the text parameter, as received
	ParseMode string // the parse_mode parameter, if any
}

// failure is an injected answer for the next call of a method.
type failure struct {
	code        int // 0: drop the connection without answering
	description string
}

// Server is a fake Telegram Bot API server. Create it with NewServer and
// stop it with Close.
type Server struct {
	// URL is the server's base URL, such as http://127.0.0.1:41234: the
	// value for a bot's server-URL option (config.api_url).
	URL string

	token string
	bot   User
	srv   *httptest.Server

	closeOnce sync.Once
	closed    chan struct{}

	mu            sync.Mutex
	changed       chan struct{} // closed and replaced on every change
	updates       []Update      // not yet confirmed, ascending ids
	nextUpdateID  int64
	nextMessageID int64
	sent          []SentMessage
	calls         map[string]int
	failures      map[string][]failure
	activePolls   int
	pollEnd       chan struct{} // closed to end the waiting getUpdates with 409
}

// NewServer starts a fake Bot API server on loopback that accepts token.
// The bot's id is the token's numeric prefix (before the colon), or 1.
func NewServer(token string) *Server {
	s := &Server{
		token:    token,
		closed:   make(chan struct{}),
		changed:  make(chan struct{}),
		calls:    map[string]int{},
		failures: map[string][]failure{},
	}
	id, err := strconv.ParseInt(strings.SplitN(token, ":", 2)[0], 10, 64)
	if err != nil || id <= 0 {
		id = 1
	}
	s.bot = User{ID: id, IsBot: true, FirstName: "Gauntlet Test Bot", Username: "gauntlet_test_bot"}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close ends every waiting getUpdates call and shuts the server down,
// blocking until all requests have finished.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	s.srv.Close()
}

// Bot returns the bot user getMe answers with.
func (s *Server) Bot() User { return s.bot }

// SendUserMessage queues an update carrying a text message from user
// fromID in chat chatID, as if the user had written to the bot. The chat
// is private when chatID equals fromID, a group otherwise. Text starting
// with "/" gets a bot_command entity, as Telegram adds one.
func (s *Server) SendUserMessage(chatID, fromID int64, text string) {
	chat := Chat{ID: chatID, Type: "private", FirstName: userName(fromID)}
	if chatID != fromID {
		chat = Chat{ID: chatID, Type: "group", Title: fmt.Sprintf("Group %d", chatID)}
	}
	msg := &Message{
		From: &User{ID: fromID, FirstName: userName(fromID)},
		Chat: chat,
		Text: text,
	}
	if strings.HasPrefix(text, "/") {
		word, _, _ := strings.Cut(text, " ")
		msg.Entities = []MessageEntity{{Type: "bot_command", Offset: 0, Length: utf16Len(word)}}
	}
	s.QueueUpdate(Update{Message: msg})
}

// QueueUpdate queues any update and returns the id it was given. The
// update's UpdateID is always assigned by the server, and so is a
// message's MessageID and Date when zero.
func (s *Server) QueueUpdate(u Update) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextUpdateID++
	u.UpdateID = s.nextUpdateID
	for _, m := range []*Message{u.Message, u.EditedMessage} {
		if m == nil {
			continue
		}
		if m.MessageID == 0 {
			s.nextMessageID++
			m.MessageID = s.nextMessageID
		}
		if m.Date == 0 {
			m.Date = time.Now().Unix()
		}
	}
	s.updates = append(s.updates, u)
	s.notifyLocked()
	return u.UpdateID
}

// Pending returns how many queued updates getUpdates has not yet had
// confirmed by a later offset.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// Sent returns the messages the bot sent so far, oldest first.
func (s *Server) Sent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.sent...)
}

// WaitSent blocks until the bot has sent at least n messages and returns
// all of them, or returns ctx's error with the messages sent so far.
func (s *Server) WaitSent(ctx context.Context, n int) ([]SentMessage, error) {
	for {
		s.mu.Lock()
		sent := append([]SentMessage(nil), s.sent...)
		wait := s.changed
		s.mu.Unlock()
		if len(sent) >= n {
			return sent, nil
		}
		select {
		case <-ctx.Done():
			return sent, fmt.Errorf("waiting for %d sent messages, got %d: %w", n, len(sent), ctx.Err())
		case <-wait:
		}
	}
}

// Calls returns how many requests for method the server received with the
// right token, failed ones included. Method names are case-insensitive.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[strings.ToLower(method)]
}

// GetUpdatesCalls returns how many getUpdates requests the server
// received.
func (s *Server) GetUpdatesCalls() int { return s.Calls("getUpdates") }

// WaitCalls blocks until the server has received at least n requests for
// method, or returns ctx's error.
func (s *Server) WaitCalls(ctx context.Context, method string, n int) error {
	method = strings.ToLower(method)
	for {
		s.mu.Lock()
		got := s.calls[method]
		wait := s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d %s calls, got %d: %w", n, method, got, ctx.Err())
		case <-wait:
		}
	}
}

// ActivePolls returns how many getUpdates requests are being held open
// right now (0 or 1 for a single, well-behaved bot).
func (s *Server) ActivePolls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.activePolls
}

// Fail makes the next n calls of method fail with 502 Bad Gateway, as
// Telegram answers when it is briefly unavailable.
func (s *Server) Fail(method string, n int) {
	s.FailWith(method, n, http.StatusBadGateway, "Bad Gateway")
}

// FailWith makes the next n calls of method fail with the given error code
// (also the HTTP status) and description, such as 409 and "Conflict:
// terminated by other getUpdates request".
func (s *Server) FailWith(method string, n, code int, description string) {
	s.inject(method, n, failure{code: code, description: description})
}

// Drop makes the next n calls of method end with the connection closed and
// no answer, as a network failure would.
func (s *Server) Drop(method string, n int) {
	s.inject(method, n, failure{})
}

func (s *Server) inject(method string, n int, f failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	method = strings.ToLower(method)
	for range n {
		s.failures[method] = append(s.failures[method], f)
	}
}

// notifyLocked wakes every waiter. s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || method == "" || strings.Contains(method, "/") {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if token != s.token {
		writeError(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	method = strings.ToLower(method)

	s.mu.Lock()
	s.calls[method]++
	var fail *failure
	if q := s.failures[method]; len(q) > 0 {
		fail = &q[0]
		s.failures[method] = q[1:]
	}
	s.notifyLocked()
	s.mu.Unlock()

	if fail != nil {
		if fail.code == 0 {
			dropConnection(w)
			return
		}
		writeError(w, fail.code, fail.description)
		return
	}

	params, err := readParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	switch method {
	case "getme":
		writeResult(w, s.bot)
	case "getupdates":
		s.getUpdates(w, r, params)
	case "sendmessage":
		s.sendMessage(w, params)
	case "sendchataction":
		if _, err := chatID(params); err != nil {
			writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error())
			return
		}
		writeResult(w, true)
	case "deletewebhook":
		writeResult(w, true)
	default:
		writeError(w, http.StatusNotFound, "Not Found: method not found")
	}
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, err1 := intParam(p, "offset", 0)
	limit, err2 := intParam(p, "limit", 100)
	timeout, err3 := intParam(p, "timeout", 0)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error())
			return
		}
	}
	limit = min(max(limit, 1), 100)
	timeout = max(timeout, 0)

	s.mu.Lock()
	s.confirmLocked(offset)
	if s.pollEnd != nil {
		close(s.pollEnd) // Telegram ends the earlier request with 409
	}
	end := make(chan struct{})
	s.pollEnd = end
	s.activePolls++
	s.notifyLocked()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.activePolls--
		if s.pollEnd == end {
			s.pollEnd = nil
		}
		s.notifyLocked()
		s.mu.Unlock()
	}()

	timer := time.NewTimer(time.Duration(timeout) * time.Second)
	defer timer.Stop()
	for {
		s.mu.Lock()
		n := min(int(limit), len(s.updates))
		batch := append([]Update{}, s.updates[:n]...)
		wait := s.changed
		s.mu.Unlock()
		if len(batch) > 0 || timeout == 0 {
			writeResult(w, batch)
			return
		}
		select {
		case <-wait:
		case <-timer.C:
			writeResult(w, []Update{})
			return
		case <-end:
			writeError(w, http.StatusConflict,
				"Conflict: terminated by other getUpdates request; make sure that only one bot instance is running")
			return
		case <-s.closed:
			writeResult(w, []Update{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// confirmLocked forgets the updates an offset confirms: every update with
// an id below a positive offset, or all but the last -offset updates for a
// negative one. s.mu must be held.
func (s *Server) confirmLocked(offset int64) {
	switch {
	case offset > 0:
		i := 0
		for i < len(s.updates) && s.updates[i].UpdateID < offset {
			i++
		}
		s.updates = s.updates[i:]
	case offset < 0:
		if keep := -offset; int64(len(s.updates)) > keep {
			s.updates = s.updates[int64(len(s.updates))-keep:]
		}
	}
}

func (s *Server) sendMessage(w http.ResponseWriter, p map[string]string) {
	chat, err := chatID(p)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	text := p["text"]
	switch {
	case strings.TrimSpace(text) == "":
		writeError(w, http.StatusBadRequest, "Bad Request: message text is empty")
		return
	case utf16Len(text) > MaxMessageLength:
		writeError(w, http.StatusBadRequest, "Bad Request: message is too long")
		return
	}
	s.mu.Lock()
	s.nextMessageID++
	msg := Message{
		MessageID: s.nextMessageID,
		From:      &s.bot,
		Chat:      Chat{ID: chat, Type: chatType(chat)},
		Date:      time.Now().Unix(),
		Text:      text,
	}
	s.sent = append(s.sent, SentMessage{MessageID: msg.MessageID, ChatID: chat, Text: text, ParseMode: p["parse_mode"]})
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, msg)
}

func chatID(p map[string]string) (int64, error) {
	v, ok := p["chat_id"]
	if !ok || v == "" {
		return 0, fmt.Errorf("chat_id is empty")
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("chat not found")
	}
	return id, nil
}

func chatType(id int64) string {
	if id < 0 {
		return "group"
	}
	return "private"
}

func intParam(p map[string]string, name string, def int64) (int64, error) {
	v, ok := p[name]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid %s", name)
	}
	return n, nil
}

// readParams collects a call's parameters from the query string and the
// body, whatever its encoding. JSON strings are unquoted; other JSON
// values keep their JSON text, as Telegram reads them.
func readParams(r *http.Request) (map[string]string, error) {
	p := map[string]string{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 50<<20))
	if err != nil {
		return nil, fmt.Errorf("reading body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return p, nil
	}
	ct, ctParams, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("can't parse JSON object")
		}
		for k, raw := range m {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				p[k] = s
			} else {
				p[k] = string(raw)
			}
		}
	case "application/x-www-form-urlencoded":
		q, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("can't parse form")
		}
		for k, v := range q {
			p[k] = v[0]
		}
	case "multipart/form-data":
		mr := multipart.NewReader(bytes.NewReader(body), ctParams["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("can't parse multipart form")
			}
			v, err := io.ReadAll(part)
			if err != nil {
				return nil, fmt.Errorf("can't parse multipart form")
			}
			if name := part.FormName(); name != "" {
				p[name] = string(v)
			}
		}
	default:
		return nil, fmt.Errorf("unsupported content type %q", ct)
	}
	return p, nil
}

func writeResult(w http.ResponseWriter, result any) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": result})
}

func writeError(w http.ResponseWriter, code int, description string) {
	writeJSON(w, code, map[string]any{"ok": false, "error_code": code, "description": description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

func userName(id int64) string { return fmt.Sprintf("User%d", id) }

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += max(utf16.RuneLen(r), 1)
	}
	return n
}
