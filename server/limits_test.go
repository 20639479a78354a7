package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/server"
)

// limitsToken is the API token of the limits tests' servers.
const limitsToken = "limits-test-token"

// withLimits sets the server's limits.
func withLimits(l server.Limits) envOption { return func(o *server.Options) { o.Limits = l } }

// patience bounds every wait of these tests for the server to do
// something: far longer than it takes, short enough that a server that
// never does it fails the test rather than hanging it.
const patience = 30 * time.Second

// outlastsPatience is a body read deadline longer than any wait of these
// tests: a server given it ends a request, or closes a connection, within
// patience only by the rule under test, never because the body's own
// deadline passed (20 s by default, less than patience).
const outlastsPatience = 4 * patience

// rawConn is a client connection that writes bytes as given, to send what
// net/http's client never would: a body that stops, a length that lies.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, baseURL string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(baseURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// send writes s; an error (the server closed) is returned, not fatal.
func (c *rawConn) send(s string) error {
	_, err := io.WriteString(c.c, s)
	return err
}

// head writes a request's line and headers (the Host header added).
func (c *rawConn) head(method, path string, header ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: test\r\n", method, path)
	for _, h := range header {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	if err := c.send(b.String()); err != nil {
		c.t.Fatal(err)
	}
}

// hold starts a request whose body stops half way, and returns once it is
// in progress: its head asks the server to confirm that it wants the body
// (Expect: 100-continue), which the server does when a handler first reads
// it, so after every check made before reading, the webhook limits
// included; only then is the first part of the body sent.
func (c *rawConn) hold(method, path string, header ...string) {
	c.t.Helper()
	c.head(method, path, append(header, "Content-Type: application/json", "Content-Length: 100", "Expect: 100-continue")...)
	if r := c.response(); r.status != http.StatusContinue {
		c.t.Fatalf("%s %s was not let in: %s", method, path, r)
	}
	if err := c.send(`{"user_id"`); err != nil {
		c.t.Fatal(err)
	}
}

// response reads the server's answer, waiting at most patience.
func (c *rawConn) response() *response {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(patience))
	res, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.t.Fatalf("no answer from the server: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("read the answer: %v", err)
	}
	if res.Close {
		// ReadResponse takes the header out.
		res.Header.Set("Connection", "close")
	}
	return &response{status: res.StatusCode, header: res.Header, body: body}
}

// closed waits until the server closes the connection; whatever it
// answered first is returned.
func (c *rawConn) closed() string {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(patience))
	got, err := io.ReadAll(c.br)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatalf("the server kept the connection open for %s; it sent %q", patience, got)
	}
	return string(got)
}

func TestLimitsOversizeBodyRefusedBeforeReading(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{}, withToken(limitsToken), withLimits(server.Limits{BodyTimeout: outlastsPatience}))
	auth := "Authorization: Bearer " + limitsToken

	for _, tc := range []struct {
		name, method, path string
		length             int64
		limit              string
	}{
		{"an ordinary route takes 1 MiB", "POST", "/api/agents", 1<<20 + 1, "1 MiB"},
		{"the definitions import takes 64 MiB", "POST", "/api/settings/import", 64<<20 + 1, "64 MiB"},
		{"the dataset import takes 64 MiB", "POST", "/api/settings/tests/import", 64<<20 + 1, "64 MiB"},
		{"a knowledge-base upload takes 50 MiB and its envelope", "POST", "/api/agents/bot/kb", 51 << 20, "50.1 MiB"},
		{"the webhook takes 1 MiB, before its signature is looked at", "POST", "/api/channels/any/webhook", 60 << 20, "1 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, e.url)
			// The length is declared, none of the body is sent: the
			// answer cannot have waited for it.
			c.head(tc.method, tc.path, auth, "Content-Type: application/json", "Content-Length: "+strconv.FormatInt(tc.length, 10))
			r := c.response()
			p := mustProblem(t, r, http.StatusRequestEntityTooLarge)
			if !strings.Contains(p.Detail, tc.limit) {
				t.Errorf("detail %q does not name the limit %s", p.Detail, tc.limit)
			}
			if r.header.Get("Connection") != "close" {
				t.Errorf("Connection: %q, want close: the rest of the body is not read", r.header.Get("Connection"))
			}
			c.closed()
		})
	}

	t.Run("a body at the limit is read", func(t *testing.T) {
		body := `{"id": "big", "name": "Big", "system_prompt": "` + strings.Repeat("x", 1<<20-200) + `"}`
		if len(body) >= 1<<20 {
			t.Fatal("test body too large")
		}
		r := e.post("/api/agents", rawBody(body))
		if r.status == http.StatusRequestEntityTooLarge {
			t.Fatalf("a body under 1 MiB refused: %s", r)
		}
	})

	t.Run("a body sent without a length is cut at the limit", func(t *testing.T) {
		c := dialRaw(t, e.url)
		c.head("POST", "/api/agents", auth, "Content-Type: application/json", "Transfer-Encoding: chunked")
		chunk := strings.Repeat("x", 64<<10)
		for sent := 0; sent < 2<<20; sent += len(chunk) {
			if c.send(fmt.Sprintf("%x\r\n%s\r\n", len(chunk), chunk)) != nil {
				break // the server answered and closed
			}
		}
		mustProblem(t, c.response(), http.StatusRequestEntityTooLarge)
	})

	t.Run("paths outside the API take no body", func(t *testing.T) {
		c := dialRaw(t, e.url)
		c.head("POST", "/assets/app.js", "Content-Length: 1000")
		mustProblem(t, c.response(), http.StatusRequestEntityTooLarge)
		c.closed()
	})
}

func TestLimitsUnauthenticatedBodyNeverRead(t *testing.T) {
	t.Parallel()
	// A server that read the body would wait for it longer than the test
	// waits for the answer and the close.
	e := newAgentEnv(t, agentConfig{}, withToken(limitsToken), withLimits(server.Limits{BodyTimeout: outlastsPatience}))
	for _, tc := range []struct {
		name, path string
		length     int
	}{
		{"a small declared body", "/api/agents", 1000},
		{"an import's declared body", "/api/settings/import", 60 << 20},
		{"a path no route has", "/api/nothing/here", 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, e.url)
			c.head("POST", tc.path, "Content-Type: application/json", "Content-Length: "+strconv.Itoa(tc.length))
			r := c.response()
			mustProblem(t, r, http.StatusUnauthorized)
			if r.header.Get("Connection") != "close" {
				t.Errorf("Connection: %q, want close", r.header.Get("Connection"))
			}
			// The body is never read: the server closes rather than wait.
			c.closed()
		})
	}
}

func TestLimitsSlowBodyCut(t *testing.T) {
	t.Parallel()
	const deadline = 300 * time.Millisecond
	e := newAgentEnv(t, agentConfig{}, withToken(limitsToken), withLimits(server.Limits{BodyTimeout: deadline}))
	e.createAgent("bot", "")
	auth := "Authorization: Bearer " + limitsToken
	for _, tc := range []struct {
		name, path string
		header     []string
	}{
		{"an authenticated JSON route", "/api/agents", []string{auth}},
		{"an import", "/api/settings/import", []string{auth}},
		{"a knowledge-base upload", "/api/agents/bot/kb", []string{auth}},
		{"the webhook", "/api/channels/any/webhook", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns []*rawConn
			for range 20 {
				c := dialRaw(t, e.url)
				c.head("POST", tc.path, append(tc.header, "Content-Type: application/json", "Content-Length: 1000")...)
				if err := c.send("{"); err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
			}
			for _, c := range conns {
				// 429 for the webhook requests over the address's limit.
				got := c.closed()
				if got != "" && !strings.HasPrefix(got, "HTTP/1.1 408 ") && !strings.HasPrefix(got, "HTTP/1.1 429 ") {
					t.Errorf("answer to a body that stopped: %q, want 408 or none", got)
				}
			}
		})
	}

	t.Run("slow headers", func(t *testing.T) {
		// The http.Server of HTTPServer, which cmd/gauntlet serves.
		var opts server.Options
		newEnv(t, withLimits(server.Limits{HeaderTimeout: deadline}), func(o *server.Options) { opts = *o })
		srv, err := server.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewUnstartedServer(nil)
		hs.Config = srv.HTTPServer()
		hs.Start()
		t.Cleanup(hs.Close)
		c := dialRaw(t, hs.URL)
		if err := c.send("POST /api/agents HTTP/1.1\r\nHost: test\r\n"); err != nil {
			t.Fatal(err)
		}
		c.closed()
	})
}

func TestLimitsLongHandlerKeepsItsRequest(t *testing.T) {
	t.Parallel()
	// A handler that works longer than the body's read deadline (and than
	// huma's own 5 s default) after the body is in: the request's
	// context must stay alive.
	const deadline = 200 * time.Millisecond
	e := newAgentEnv(t, agentConfig{}, withLimits(server.Limits{BodyTimeout: deadline}))
	e.createAgent("bot", "")
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply {
		time.Sleep(6 * time.Second)
		return &llmtest.Reply{Content: "slow answer"}
	})
	r := must(t, e.post("/api/agents/bot/chat", map[string]any{"message": "hello", "user_id": "u1"}), http.StatusOK)
	var got chatBody
	r.decode(t, &got)
	if got.Response != "slow answer" {
		t.Errorf("response %q", got.Response)
	}
}

func TestLimitsWebhookPerAddress(t *testing.T) {
	t.Parallel()
	t.Run("rate", func(t *testing.T) {
		e := newAgentEnv(t, agentConfig{}, withToken(limitsToken),
			withLimits(server.Limits{WebhookRate: 0.001, WebhookBurst: 3}))
		body := []byte(`{"user_id": "u", "message": "m"}`)
		for i := range 3 {
			if r := e.webhookPost("nope", body, "sha256=00"); r.status != http.StatusUnauthorized {
				t.Fatalf("request %d: %s, want 401", i+1, r)
			}
		}
		r := e.webhookPost("nope", body, "sha256=00")
		mustProblem(t, r, http.StatusTooManyRequests)
		if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
			t.Errorf("Retry-After %q, want whole seconds", r.header.Get("Retry-After"))
		}
		// The rest of the API is not counted.
		req, _ := http.NewRequest(http.MethodGet, e.url+"/api/agents", nil)
		req.Header.Set("Authorization", "Bearer "+limitsToken)
		must(t, e.send(req), http.StatusOK)
	})

	t.Run("requests in progress", func(t *testing.T) {
		e := newAgentEnv(t, agentConfig{}, withToken(limitsToken), withLimits(server.Limits{
			WebhookConcurrency: 2, WebhookBurst: 1000, WebhookRate: 1000, BodyTimeout: outlastsPatience}))
		body := []byte(`{"user_id": "u", "message": "m"}`)
		// Two requests in progress, their bodies stopped half way; each is
		// known to be in before anything else is sent. Were another
		// request of this address in progress when the server read one of
		// them (a third sent at once, and read first on a loaded machine),
		// that one would be refused, and the third would take its place:
		// admitted for as long as the other is held.
		var held []*rawConn
		for range 2 {
			c := dialRaw(t, e.url)
			c.hold("POST", "/api/channels/nope/webhook")
			held = append(held, c)
		}
		r := e.webhookPost("nope", body, "sha256=00")
		mustProblem(t, r, http.StatusTooManyRequests)
		if r.header.Get("Retry-After") == "" {
			t.Error("no Retry-After")
		}
		for _, c := range held {
			c.c.Close()
		}
		for start := time.Now(); ; {
			if r = e.webhookPost("nope", body, "sha256=00"); r.status == http.StatusUnauthorized {
				break
			}
			if time.Since(start) > patience {
				t.Fatalf("requests still refused once the others ended: %s", r)
			}
		}
	})
}

func TestWebhookUnknownChannelAnswersAsBadSignature(t *testing.T) {
	t.Parallel()
	const secret = "whsec-probe"
	e := newAgentEnv(t, agentConfig{}, withToken(limitsToken))
	e.createAgent("bot", "")
	c := e.createChannel("bot", map[string]any{"type": "webhook", "config": map[string]any{"secret": secret}})
	id := c["id"].(string)
	e.channelAction("bot", id, "start")
	stopped := e.createChannel("bot", map[string]any{"type": "webhook", "config": map[string]any{"secret": secret}})["id"].(string)
	body := []byte(`{"user_id": "u", "message": "hello"}`)

	answers := map[string]*response{
		"unknown id, signed":        e.webhookPost("no-such-channel", body, webhook.Sign(secret, body)),
		"unknown id, unsigned":      e.webhookPost("no-such-channel", body, ""),
		"known id, wrong signature": e.webhookPost(id, body, webhook.Sign("other", body)),
		"known id, no signature":    e.webhookPost(id, body, ""),
		"stopped channel, signed":   e.webhookPost(stopped, body, webhook.Sign(secret, body)),
	}
	want := answers["unknown id, signed"]
	mustProblem(t, want, http.StatusUnauthorized)
	for name, r := range answers {
		if r.status != want.status || !bytes.Equal(r.body, want.body) {
			t.Errorf("%s: %s; unknown id: %s", name, r, want)
		}
	}
	var p problem
	if json.Unmarshal(want.body, &p) != nil || !strings.Contains(p.Detail, "no running channel") {
		t.Errorf("detail %q", p.Detail)
	}
	// The right signature still gets through.
	must(t, e.webhookPost(id, body, webhook.Sign(secret, body)), http.StatusOK)
}

// TestLimitsUnauthenticatedFloodBounded is the case of a client without
// the API token sending 30 bodies of 60 MiB at once to the webhook, half
// with their length declared and half streamed: the server must refuse
// them having allocated far less than they send.
func TestLimitsUnauthenticatedFloodBounded(t *testing.T) {
	const (
		clients  = 30
		perBody  = 60 << 20
		maxAlloc = 100 << 20
	)
	e := newAgentEnv(t, agentConfig{}, withToken(limitsToken))
	addr := strings.TrimPrefix(e.url, "http://")
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	chunkHead := []byte(fmt.Sprintf("%x\r\n", len(chunk)))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		sent int64
		seen = map[int]int{}
	)
	for i := range clients {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(patience))
			streamed := i%2 == 1
			head := "POST /api/channels/c" + strconv.Itoa(i) + "/webhook HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
			if streamed {
				head += "Transfer-Encoding: chunked\r\n\r\n"
			} else {
				head += "Content-Length: " + strconv.Itoa(perBody) + "\r\n\r\n"
			}
			var n int64
			if _, err := io.WriteString(c, head); err != nil {
				t.Error(err)
				return
			}
			// Write until the body is sent or the server stops reading.
			for n < perBody {
				if streamed {
					if _, err := c.Write(chunkHead); err != nil {
						break
					}
				}
				m, err := c.Write(chunk)
				n += int64(m)
				if err != nil {
					break
				}
				if streamed {
					if _, err := c.Write([]byte("\r\n")); err != nil {
						break
					}
				}
			}
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			status := 0
			if err == nil {
				status = res.StatusCode
				res.Body.Close()
			}
			mu.Lock()
			sent += n
			seen[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d clients wrote %d MiB; the process allocated %d MiB meanwhile; answers %v",
		clients, sent>>20, alloc>>20, seen)
	if alloc > maxAlloc {
		t.Errorf("the process allocated %d MiB for %d clients' bodies, want at most %d MiB", alloc>>20, clients, maxAlloc>>20)
	}
	for status, n := range seen {
		if status != http.StatusRequestEntityTooLarge && status != http.StatusTooManyRequests && status != 0 {
			t.Errorf("%d answers %d, want 413 or 429", n, status)
		}
	}
}
