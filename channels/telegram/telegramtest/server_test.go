package telegramtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

const token = "4242:test-token_ABC"

type answer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
}

// call posts params to method as JSON and decodes the answer. It reports
// failures with t.Error, so goroutines may use it.
func call(t *testing.T, base, tok, method string, params map[string]any) (int, answer) {
	t.Helper()
	body, _ := json.Marshal(params)
	resp, err := http.Post(base+"/bot"+tok+"/"+method, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, answer{}
	}
	return decode(t, resp)
}

func decode(t *testing.T, resp *http.Response) (int, answer) {
	t.Helper()
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Error(err)
	}
	return resp.StatusCode, a
}

func updates(t *testing.T, a answer) []telegramtest.Update {
	t.Helper()
	var u []telegramtest.Update
	if err := json.Unmarshal(a.Result, &u); err != nil {
		t.Errorf("result %s: %v", a.Result, err)
	}
	return u
}

func TestAuthAndRouting(t *testing.T) {
	srv := telegramtest.NewServer(token)
	defer srv.Close()

	status, a := call(t, srv.URL, "4242:wrong", "getMe", nil)
	if status != 401 || a.OK || a.ErrorCode != 401 || a.Description != "Unauthorized" {
		t.Errorf("wrong token: %d %+v", status, a)
	}
	status, a = call(t, srv.URL, token, "noSuchMethod", nil)
	if status != 404 || a.OK || a.ErrorCode != 404 {
		t.Errorf("unknown method: %d %+v", status, a)
	}
	resp, err := http.Get(srv.URL + "/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := decode(t, resp); status != 404 {
		t.Errorf("bad path: %d", status)
	}

	status, a = call(t, srv.URL, token, "GETME", nil) // method names are case-insensitive
	var me telegramtest.User
	_ = json.Unmarshal(a.Result, &me)
	if status != 200 || !a.OK || me.ID != 4242 || !me.IsBot || me.Username == "" {
		t.Errorf("getMe: %d %+v %+v", status, a, me)
	}
	if srv.Calls("getMe") != 1 {
		t.Errorf("getMe calls = %d, want 1 (wrong-token calls are not counted)", srv.Calls("getMe"))
	}
}

func TestSendMessageEncodings(t *testing.T) {
	srv := telegramtest.NewServer(token)
	defer srv.Close()
	u := srv.URL + "/bot" + token + "/sendMessage"

	// JSON, with a numeric chat_id.
	if status, a := call(t, srv.URL, token, "sendMessage", map[string]any{"chat_id": 10, "text": "json"}); status != 200 || !a.OK {
		t.Fatalf("json: %d %+v", status, a)
	}
	// URL-encoded form.
	resp, err := http.PostForm(u, url.Values{"chat_id": {"11"}, "text": {"form"}})
	if err != nil {
		t.Fatal(err)
	}
	if status, a := decode(t, resp); status != 200 || !a.OK {
		t.Fatalf("form: %d %+v", status, a)
	}
	// Multipart, as go-telegram/bot sends.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("chat_id", "-12")
	_ = mw.WriteField("text", "multipart")
	_ = mw.WriteField("parse_mode", "HTML")
	mw.Close()
	resp, err = http.Post(u, mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	status, a := decode(t, resp)
	var msg telegramtest.Message
	_ = json.Unmarshal(a.Result, &msg)
	if status != 200 || msg.Chat.ID != -12 || msg.Text != "multipart" || msg.MessageID == 0 || msg.From == nil || !msg.From.IsBot {
		t.Fatalf("multipart: %d %+v", status, msg)
	}
	// Query string.
	resp, err = http.Get(u + "?chat_id=13&text=query")
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := decode(t, resp); status != 200 {
		t.Fatalf("query: %d", status)
	}

	got := srv.Sent()
	want := []telegramtest.SentMessage{
		{MessageID: 1, ChatID: 10, Text: "json"},
		{MessageID: 2, ChatID: 11, Text: "form"},
		{MessageID: 3, ChatID: -12, Text: "multipart", ParseMode: "HTML"},
		{MessageID: 4, ChatID: 13, Text: "query"},
	}
	if len(got) != len(want) {
		t.Fatalf("sent %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sent[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}

	for name, params := range map[string]map[string]any{
		"empty text": {"chat_id": 1, "text": " "},
		"too long":   {"chat_id": 1, "text": strings.Repeat("a", telegramtest.MaxMessageLength+1)},
		"no chat":    {"text": "x"},
		"bad chat":   {"chat_id": "@nobody", "text": "x"},
	} {
		if status, a := call(t, srv.URL, token, "sendMessage", params); status != 400 || a.OK || a.ErrorCode != 400 {
			t.Errorf("%s: %d %+v, want 400", name, status, a)
		}
	}
	if n := len(srv.Sent()); n != 4 {
		t.Errorf("refused messages were recorded: %d", n)
	}
}

func TestGetUpdatesOffsets(t *testing.T) {
	srv := telegramtest.NewServer(token)
	defer srv.Close()
	srv.SendUserMessage(1, 1, "one")
	srv.SendUserMessage(2, 2, "/two now")
	srv.SendUserMessage(-3, 3, "three")

	_, a := call(t, srv.URL, token, "getUpdates", map[string]any{"limit": 2})
	ups := updates(t, a)
	if len(ups) != 2 || ups[0].UpdateID != 1 || ups[1].UpdateID != 2 {
		t.Fatalf("limit 2: %+v", ups)
	}
	m := ups[1].Message
	if m.Text != "/two now" || m.From.ID != 2 || m.Chat.Type != "private" ||
		len(m.Entities) != 1 || m.Entities[0] != (telegramtest.MessageEntity{Type: "bot_command", Offset: 0, Length: 4}) {
		t.Errorf("command message %+v", m)
	}
	// Without an offset nothing is confirmed.
	_, a = call(t, srv.URL, token, "getUpdates", nil)
	if ups = updates(t, a); len(ups) != 3 || ups[2].Message.Chat.Type != "group" {
		t.Fatalf("again: %+v", ups)
	}
	// offset 3 confirms 1 and 2.
	_, a = call(t, srv.URL, token, "getUpdates", map[string]any{"offset": 3})
	if ups = updates(t, a); len(ups) != 1 || ups[0].UpdateID != 3 || srv.Pending() != 1 {
		t.Fatalf("offset 3: %+v, pending %d", ups, srv.Pending())
	}
	_, a = call(t, srv.URL, token, "getUpdates", map[string]any{"offset": 4})
	if ups = updates(t, a); len(ups) != 0 || srv.Pending() != 0 {
		t.Fatalf("offset 4: %+v", ups)
	}
	// A negative offset keeps only the last updates.
	for _, s := range []string{"a", "b", "c"} {
		srv.SendUserMessage(1, 1, s)
	}
	_, a = call(t, srv.URL, token, "getUpdates", map[string]any{"offset": -1})
	if ups = updates(t, a); len(ups) != 1 || ups[0].Message.Text != "c" {
		t.Fatalf("offset -1: %+v", ups)
	}
	if srv.GetUpdatesCalls() != 5 {
		t.Errorf("GetUpdatesCalls = %d, want 5", srv.GetUpdatesCalls())
	}
}

func TestLongPoll(t *testing.T) {
	srv := telegramtest.NewServer(token)
	defer srv.Close()

	// Held until an update arrives.
	got := make(chan []telegramtest.Update, 1)
	go func() {
		_, a := call(t, srv.URL, token, "getUpdates", map[string]any{"timeout": 10})
		got <- updates(t, a)
	}()
	harnesstest.Eventually(t, 0, "a held getUpdates", func() bool { return srv.ActivePolls() == 1 })
	select {
	case <-got:
		t.Fatal("getUpdates returned before any update")
	case <-time.After(50 * time.Millisecond):
	}
	srv.SendUserMessage(5, 5, "wake up")
	select {
	case ups := <-got:
		if len(ups) != 1 || ups[0].Message.Text != "wake up" {
			t.Errorf("got %+v", ups)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("long poll not answered after an update")
	}

	// Timeout: an empty result after about a second.
	began := time.Now()
	_, a := call(t, srv.URL, token, "getUpdates", map[string]any{"offset": 2, "timeout": 1})
	if ups := updates(t, a); len(ups) != 0 {
		t.Errorf("got %+v", ups)
	}
	if d := time.Since(began); d < 900*time.Millisecond || d > 3*time.Second {
		t.Errorf("timeout 1 answered after %s", d)
	}

	// A second poll ends the first with 409, as Telegram does.
	first := make(chan int, 1)
	go func() {
		status, _ := call(t, srv.URL, token, "getUpdates", map[string]any{"offset": 2, "timeout": 10})
		first <- status
	}()
	harnesstest.Eventually(t, 0, "a held getUpdates", func() bool { return srv.ActivePolls() == 1 })
	second := make(chan int, 1)
	go func() {
		status, _ := call(t, srv.URL, token, "getUpdates", map[string]any{"offset": 2, "timeout": 1})
		second <- status
	}()
	select {
	case status := <-first:
		if status != http.StatusConflict {
			t.Errorf("first poll ended with %d, want 409", status)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("first poll not ended by the second")
	}
	if status := <-second; status != http.StatusOK {
		t.Errorf("second poll ended with %d, want 200", status)
	}
}

func TestFailureInjection(t *testing.T) {
	srv := telegramtest.NewServer(token)
	defer srv.Close()
	srv.Fail("getMe", 1)
	srv.FailWith("sendMessage", 1, 429, "Too Many Requests: retry after 1")
	srv.Drop("getUpdates", 1)

	if status, a := call(t, srv.URL, token, "getMe", nil); status != 502 || a.ErrorCode != 502 {
		t.Errorf("getMe: %d %+v", status, a)
	}
	if status, _ := call(t, srv.URL, token, "getMe", nil); status != 200 {
		t.Errorf("second getMe: %d", status)
	}
	if status, a := call(t, srv.URL, token, "sendMessage", map[string]any{"chat_id": 1, "text": "x"}); status != 429 || a.Description == "" {
		t.Errorf("sendMessage: %d %+v", status, a)
	}
	if _, err := http.Post(srv.URL+"/bot"+token+"/getUpdates", "application/json", strings.NewReader("{}")); err == nil {
		t.Error("dropped getUpdates got an answer")
	}
	if srv.Calls("getMe") != 2 || srv.Calls("sendMessage") != 1 || srv.GetUpdatesCalls() != 1 {
		t.Errorf("calls: getMe %d sendMessage %d getUpdates %d", srv.Calls("getMe"), srv.Calls("sendMessage"), srv.GetUpdatesCalls())
	}
}

func TestWaitSentAndConcurrency(t *testing.T) {
	srv := telegramtest.NewServer(token)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := srv.WaitSent(ctx, 1); err == nil {
		t.Error("WaitSent returned without messages")
	}

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(t, srv.URL, token, "sendMessage", map[string]any{"chat_id": i + 1, "text": "hi"})
			srv.SendUserMessage(int64(i+1), int64(i+1), "hello")
		}()
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sent, err := srv.WaitSent(ctx, 20)
	if err != nil || len(sent) != 20 {
		t.Fatalf("WaitSent: %d, %v", len(sent), err)
	}
	wg.Wait()
	if srv.Pending() != 20 {
		t.Errorf("pending %d, want 20", srv.Pending())
	}
}

func TestCloseEndsHeldPolls(t *testing.T) {
	srv := telegramtest.NewServer(token)
	done := make(chan struct{})
	go func() {
		defer close(done)
		call(t, srv.URL, token, "getUpdates", map[string]any{"timeout": 30})
	}()
	harnesstest.Eventually(t, 0, "a held getUpdates", func() bool { return srv.ActivePolls() == 1 })
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	for _, ch := range []chan struct{}{done, closed} {
		select {
		case <-ch:
		case <-time.After(2 * time.Second):
			t.Fatal("Close did not end the held poll")
		}
	}
}
