package server

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/internal/limitio"
)

// DefaultBodyBytes is the body limit of a route that declares none: the
// JSON bodies of ordinary operations. The definitions and dataset imports
// and the knowledge-base uploads declare larger ones; the webhook takes
// this much; paths outside /api/ take no body at all.
const DefaultBodyBytes = 1 << 20

// MaxHeaderBytes bounds a request's header section (the request line
// included).
const MaxHeaderBytes = 64 << 10

// minUploadRate is the average rate, in bytes per second, at which a body
// larger than DefaultBodyBytes must arrive: its read deadline is
// Limits.BodyTimeout plus one second per minUploadRate bytes above
// DefaultBodyBytes.
const minUploadRate = 128 << 10

// Limits bound what a client can make the server hold: the size of a
// request's body, time to send a request, connections kept idle, and, on
// the webhook routes (which need no API token), requests per client
// address. A zero field takes its default.
type Limits struct {
	// BodyBytes bounds the body of a route that declares no limit of its
	// own: the JSON bodies of ordinary operations. DefaultBodyBytes
	// (1 MiB). The webhook takes at most 1 MiB, or BodyBytes when it is
	// smaller.
	BodyBytes int64
	// ImportBytes bounds the body of the definitions and dataset imports:
	// MaxImportBytes (64 MiB).
	ImportBytes int64
	// UploadBytes bounds the body of a knowledge-base upload (a new file,
	// or a file's new content): MaxUploadBytes, which is also its
	// largest value, as the knowledge base takes no larger document.
	UploadBytes int64
	// HeaderTimeout is the time a client has to send a request's
	// headers: 10 s.
	HeaderTimeout time.Duration
	// BodyTimeout is the time a client has, once the headers are in, to
	// send a body of up to DefaultBodyBytes: 20 s, so that headers and
	// body arrive within 30 s. A larger body has one more second per
	// 128 KiB (a 64 MiB import: about 9 minutes). A request that has not
	// sent its body by then is answered 408 and its connection closed.
	BodyTimeout time.Duration
	// IdleTimeout is how long a connection is kept open waiting for the
	// next request: 30 s.
	IdleTimeout time.Duration
	// WebhookConcurrency is the number of webhook requests one client
	// address may have in progress at once: 8.
	WebhookConcurrency int
	// WebhookRate is the rate of webhook requests one client address may
	// keep up, per second: 10; WebhookBurst how many it may send at once
	// after a pause: 20.
	WebhookRate  float64
	WebhookBurst int
	// WebhookTotal is the number of webhook requests in progress from all
	// addresses together: 32.
	WebhookTotal int
	// WebhookClients bounds the table of client addresses the webhook
	// limits keep: 4096. When every entry is in use, a new address is
	// refused (429) until one frees.
	WebhookClients int
}

// DefaultLimits returns the limits a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{
		BodyBytes:          DefaultBodyBytes,
		ImportBytes:        MaxImportBytes,
		UploadBytes:        MaxUploadBytes,
		HeaderTimeout:      10 * time.Second,
		BodyTimeout:        20 * time.Second,
		IdleTimeout:        30 * time.Second,
		WebhookConcurrency: 8,
		WebhookRate:        10,
		WebhookBurst:       20,
		WebhookTotal:       32,
		WebhookClients:     4096,
	}
}

// withDefaults fills l's zero fields with DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	fill := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&l.HeaderTimeout, d.HeaderTimeout)
	fill(&l.BodyTimeout, d.BodyTimeout)
	fill(&l.IdleTimeout, d.IdleTimeout)
	for _, f := range []struct{ v, def *int }{
		{&l.WebhookConcurrency, &d.WebhookConcurrency}, {&l.WebhookBurst, &d.WebhookBurst},
		{&l.WebhookTotal, &d.WebhookTotal}, {&l.WebhookClients, &d.WebhookClients},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if l.WebhookRate <= 0 {
		l.WebhookRate = d.WebhookRate
	}
	for _, f := range []struct{ v, def *int64 }{
		{&l.BodyBytes, &d.BodyBytes}, {&l.ImportBytes, &d.ImportBytes}, {&l.UploadBytes, &d.UploadBytes},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	l.UploadBytes = min(l.UploadBytes, MaxUploadBytes)
	return l
}

// bodyTimeout is the time a body of n bytes has to arrive.
func (l Limits) bodyTimeout(n int64) time.Duration {
	d := l.BodyTimeout
	if extra := n - DefaultBodyBytes; extra > 0 {
		d += time.Duration(extra / minUploadRate * int64(time.Second))
	}
	return d
}

// HTTPServer returns an http.Server serving the API with s's limits: a
// header timeout, an idle timeout and a header size limit. It sets no
// write timeout, so that long polls and streamed exports are not cut. The
// handler applies the body limits and deadlines under any http.Server;
// one built by hand needs its own header timeout.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.limits.cfg.HeaderTimeout,
		IdleTimeout:       s.limits.cfg.IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// bodyRule is what a route allows a request to send. It is an
// http.Handler only so that a ServeMux can find it by pattern.
type bodyRule struct {
	max     int64
	webhook bool
}

func (bodyRule) ServeHTTP(http.ResponseWriter, *http.Request) {}

// rawBodyRoutes are the routes served by plain handlers that read their
// own bodies, with their limits; huma operations declare theirs with
// MaxBodyBytes.
var rawBodyRoutes = map[string]bodyRule{
	"POST /api/agents/{agent_id}/kb": {max: maxKBRequestBytes},
	// Every method: a webhook path needs no API token whatever the method.
	"/api/channels/{channel_id}/webhook": {max: maxWebhookBytes, webhook: true},
}

// limiter applies Limits before any other middleware reads a request.
type limiter struct {
	cfg     Limits
	routes  *http.ServeMux
	webhook *clientTable
	// maxBody is the largest body limit of any route.
	maxBody int64
}

// newLimiter makes the limiter of an API whose operations are all
// registered: each operation with a MaxBodyBytes gets that limit, as
// cfg sets it (Limits.routeMax; huma's own check of the operation is
// given the same).
func newLimiter(cfg Limits, oa *huma.OpenAPI) *limiter {
	cfg = cfg.withDefaults()
	l := &limiter{cfg: cfg, routes: http.NewServeMux(), webhook: newClientTable(cfg), maxBody: cfg.BodyBytes}
	for path, item := range oa.Paths {
		for method, op := range map[string]*huma.Operation{
			http.MethodPost: item.Post, http.MethodPut: item.Put, http.MethodPatch: item.Patch,
		} {
			if op == nil || op.MaxBodyBytes <= 0 {
				continue
			}
			op.MaxBodyBytes = cfg.routeMax(op.MaxBodyBytes)
			l.maxBody = max(l.maxBody, op.MaxBodyBytes)
			_, raw := rawBodyRoutes[method+" "+path]
			_, rawAny := rawBodyRoutes[path]
			if !raw && !rawAny {
				l.routes.Handle(method+" "+path, bodyRule{max: op.MaxBodyBytes})
			}
		}
	}
	for pattern, rule := range rawBodyRoutes {
		if rule.webhook {
			rule.max = min(rule.max, cfg.BodyBytes)
		} else {
			rule.max = cfg.routeMax(rule.max)
		}
		l.maxBody = max(l.maxBody, rule.max)
		l.routes.Handle(pattern, rule)
	}
	return l
}

// rule returns the rule of r's route: its own, else Limits.BodyBytes
// under /api/ and no body elsewhere.
func (l *limiter) rule(r *http.Request) bodyRule {
	if h, _ := l.routes.Handler(r); h != nil {
		if rule, ok := h.(bodyRule); ok {
			return rule
		}
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		return bodyRule{max: l.cfg.BodyBytes}
	}
	return bodyRule{}
}

// handler bounds every request before next sees it, in this order: a
// webhook request over its address's limits is refused (429), a body
// declared larger than the route's limit is refused (413) without being
// read, a body sent without a length is cut at the limit (the reader
// returns an *http.MaxBytesError), and the body must arrive within the
// route's read deadline. A request answered before its body was read
// whole closes its connection instead of reading the rest: the API token
// check refuses a request without reading any of it.
//
// The limiter owns the connection's read deadline: a handler's request
// for one (huma's BodyReadTimeout) is ignored, as it would cut a large
// upload short and, set once the body is read, would cancel the
// request's context while the handler works.
func (l *limiter) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rule := l.rule(r)
		lw := &limitedWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
		if r.Body != nil && r.Body != http.NoBody {
			lw.body = limitio.New(r.Body, rule.max, &http.MaxBytesError{Limit: rule.max})
			// A copy: net/http keeps judging its own body, to know whether
			// the connection can serve another request.
			r = r.WithContext(r.Context())
			r.Body = lw.body
		}
		if rule.webhook {
			release, retry := l.webhook.admit(clientKey(r.RemoteAddr), time.Now())
			if release == nil {
				lw.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
				writeProblem(lw, http.StatusTooManyRequests, fmt.Sprintf(
					"too many webhook requests from this address; retry in %s", retry.Round(time.Second)))
				return
			}
			defer release()
		}
		if r.ContentLength > rule.max {
			writeProblem(lw, http.StatusRequestEntityTooLarge, tooLarge(rule.max))
			return
		}
		if lw.body != nil {
			n := r.ContentLength
			if n < 0 {
				n = rule.max
			}
			// Refused by the mere lack of support (a test's recorder):
			// nothing to bound then.
			_ = lw.rc.SetReadDeadline(time.Now().Add(l.cfg.bodyTimeout(n)))
		}
		next.ServeHTTP(lw, r)
		lw.beforeHeader()
	})
}

// tooLarge is the detail of a 413 for a route whose limit is max bytes.
func tooLarge(max int64) string {
	if max == 0 {
		return "this path takes no request body"
	}
	return "the request body is over " + byteSize(max) + ", this endpoint's limit"
}

// byteSize writes n as "1 MiB", "50.1 MiB" or "100 bytes".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// writeBodyError answers a request whose body could not be read: 413 over
// the limit, 408 past the read deadline, else 400.
func writeBodyError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeProblem(w, http.StatusRequestEntityTooLarge, tooLarge(tooBig.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeProblem(w, http.StatusRequestTimeout, "the request body did not arrive in time")
	default:
		writeProblem(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
	}
}

// limitedWriter closes the connection after a response given before the
// request's body was read whole, and keeps the read deadline to the
// limiter.
type limitedWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	body  *limitio.Reader // the request body, cut at its limit
	wrote bool
}

// beforeHeader runs once, before the response's header is sent. When the
// body was not read to its end, the rest is not read: net/http would
// otherwise read up to 256 KiB of it, for as long as the client takes,
// before it answers or closes. The connection is closed after the
// response instead.
func (w *limitedWriter) beforeHeader() {
	if w.wrote {
		return
	}
	w.wrote = true
	if w.body != nil && !w.body.EOF() {
		closeAfterResponse(w.ResponseWriter)
		_ = w.rc.SetReadDeadline(time.Now())
	}
}

// closeAfterResponse makes net/http close the connection once the
// response is sent, as it does for a body over an http.MaxBytesReader's
// limit: "Connection: close", and a lingering close (the server stops
// writing, waits a moment, then closes) so that a client still sending
// its body gets the response before the connection is reset. An empty
// MaxBytesReader over one byte is how a handler says so.
func closeAfterResponse(w http.ResponseWriter) {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	io.Copy(io.Discard, http.MaxBytesReader(w, io.NopCloser(strings.NewReader("x")), 0))
	w.Header().Set("Connection", "close")
}

func (w *limitedWriter) WriteHeader(code int) {
	w.beforeHeader()
	w.ResponseWriter.WriteHeader(code)
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	w.beforeHeader()
	return w.ResponseWriter.Write(p)
}

// FlushError flushes the response (through http.ResponseController).
func (w *limitedWriter) FlushError() error {
	w.beforeHeader()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// SetReadDeadline ignores a handler's read deadline: the limiter set
// the request's.
func (w *limitedWriter) SetReadDeadline(time.Time) error { return nil }

// Unwrap gives http.ResponseController the connection's writer.
func (w *limitedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// clientKey is the address a request's limits are counted against: the
// client's IPv4 address, or the /64 network of its IPv6 address (one
// host commonly holds a whole /64). Behind a reverse proxy, every client
// has the proxy's address.
func clientKey(remoteAddr string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// clientTable counts the webhook requests of each client address: those
// in progress, and a token bucket for their rate. It holds at most
// Limits.WebhookClients addresses: an address with nothing in progress
// whose bucket is full again is as good as absent, and is dropped when
// room is needed.
type clientTable struct {
	mu      sync.Mutex
	cfg     Limits
	total   int
	clients map[netip.Prefix]*client
}

type client struct {
	active int
	tokens float64
	last   time.Time
}

func newClientTable(cfg Limits) *clientTable {
	return &clientTable{cfg: cfg, clients: map[netip.Prefix]*client{}}
}

// admit counts a request from key at now. It returns the function that
// ends it, or nil and how long to wait before trying again.
func (t *clientTable) admit(key netip.Prefix, now time.Time) (release func(), retry time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.clients[key]
	if c == nil {
		if len(t.clients) >= t.cfg.WebhookClients {
			t.sweep(now)
		}
		if len(t.clients) >= t.cfg.WebhookClients {
			return nil, time.Second
		}
		c = &client{tokens: float64(t.cfg.WebhookBurst), last: now}
		t.clients[key] = c
	}
	c.refill(now, t.cfg)
	switch {
	case c.tokens < 1:
		return nil, time.Duration((1 - c.tokens) / t.cfg.WebhookRate * float64(time.Second))
	case c.active >= t.cfg.WebhookConcurrency, t.total >= t.cfg.WebhookTotal:
		return nil, time.Second
	}
	c.tokens--
	c.active++
	t.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			c.active--
			t.total--
		})
	}, 0
}

// refill adds the tokens earned since c.last.
func (c *client) refill(now time.Time, cfg Limits) {
	if d := now.Sub(c.last); d > 0 {
		c.tokens = min(float64(cfg.WebhookBurst), c.tokens+d.Seconds()*cfg.WebhookRate)
		c.last = now
	}
}

// sweep drops the addresses that have nothing in progress and a full
// bucket.
func (t *clientTable) sweep(now time.Time) {
	for key, c := range t.clients {
		c.refill(now, t.cfg)
		if c.active == 0 && c.tokens >= float64(t.cfg.WebhookBurst) {
			delete(t.clients, key)
		}
	}
}
