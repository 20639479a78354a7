package server

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestLimitsDefaults: with no limits set, a client that trickles has its
// headers and a small body cut within 30 s, and the http.Server that
// cmd/gauntlet serves applies the header and idle timeouts but no write
// timeout (long polls and exports stream for as long as they need).
func TestLimitsDefaults(t *testing.T) {
	t.Parallel()
	l := Limits{}.withDefaults()
	if got := l.HeaderTimeout + l.bodyTimeout(DefaultBodyBytes); got > 30*time.Second {
		t.Errorf("headers and a 1 MiB body may take %s, want at most 30 s", got)
	}
	if l.BodyTimeout != 20*time.Second || l.HeaderTimeout != 10*time.Second || l.IdleTimeout != 30*time.Second {
		t.Errorf("defaults %+v", l)
	}
	for _, tc := range []struct {
		n    int64
		want time.Duration
	}{
		{0, 20 * time.Second},
		{1000, 20 * time.Second},
		{DefaultBodyBytes, 20 * time.Second},
		{MaxImportBytes, 20*time.Second + 504*time.Second},
	} {
		if got := l.bodyTimeout(tc.n); got != tc.want {
			t.Errorf("bodyTimeout(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}

	s := newTestServer(t, Options{})
	hs := s.HTTPServer()
	if hs.ReadHeaderTimeout != 10*time.Second || hs.IdleTimeout != 30*time.Second || hs.MaxHeaderBytes != MaxHeaderBytes {
		t.Errorf("http.Server: header %s, idle %s, max header bytes %d", hs.ReadHeaderTimeout, hs.IdleTimeout, hs.MaxHeaderBytes)
	}
	if hs.WriteTimeout != 0 || hs.ReadTimeout != 0 {
		t.Errorf("http.Server: write timeout %s, read timeout %s, want none (the limiter bounds reads per route)", hs.WriteTimeout, hs.ReadTimeout)
	}
	if hs.Handler == nil {
		t.Error("http.Server without the API's handler")
	}
}

// TestLimitsRoutes: each route's body limit comes from its operation
// (the agent routes exist only with an agent service: the plain handlers'
// rules are there regardless).
func TestLimitsRoutes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, Options{})
	for _, tc := range []struct {
		method, path string
		want         bodyRule
	}{
		{"POST", "/api/settings/import", bodyRule{max: MaxImportBytes}},
		{"POST", "/api/settings/tests/import", bodyRule{max: MaxImportBytes}},
		{"POST", "/api/agents/bot/kb", bodyRule{max: maxKBRequestBytes}},
		{"POST", "/api/channels/c1/webhook", bodyRule{max: DefaultBodyBytes, webhook: true}},
		{"PUT", "/api/channels/c1/webhook", bodyRule{max: DefaultBodyBytes, webhook: true}},
		{"POST", "/api/agents", bodyRule{max: DefaultBodyBytes}},
		{"GET", "/api/settings/import", bodyRule{max: DefaultBodyBytes}},
		{"POST", "/api/no/such/route", bodyRule{max: DefaultBodyBytes}},
		{"POST", "/", bodyRule{}},
		{"GET", "/assets/app.js", bodyRule{}},
	} {
		if got := s.limits.rule(httptest.NewRequest(tc.method, tc.path, nil)); got != tc.want {
			t.Errorf("%s %s: %+v, want %+v", tc.method, tc.path, got, tc.want)
		}
	}
}

// TestClientTable: the webhook limits per address, and the table's bound.
func TestClientTable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	a, b, c := clientKey("192.0.2.1:1000"), clientKey("192.0.2.2:1000"), clientKey("192.0.2.3:1000")

	t.Run("in progress", func(t *testing.T) {
		tab := newClientTable(Limits{WebhookConcurrency: 2, WebhookRate: 1000, WebhookBurst: 1000, WebhookTotal: 3, WebhookClients: 10})
		r1, _ := tab.admit(a, now)
		r2, _ := tab.admit(a, now)
		if r1 == nil || r2 == nil {
			t.Fatal("the first two refused")
		}
		if r, retry := tab.admit(a, now); r != nil || retry <= 0 {
			t.Fatalf("a third in progress admitted (retry %s)", retry)
		}
		rb, _ := tab.admit(b, now)
		if rb == nil {
			t.Fatal("another address refused")
		}
		if r, _ := tab.admit(c, now); r != nil {
			t.Fatal("admitted over the total")
		}
		r1()
		r1() // twice: counted once
		if r, _ := tab.admit(a, now); r == nil {
			t.Fatal("refused once one ended")
		}
		if tab.total != 3 {
			t.Errorf("total %d, want 3", tab.total)
		}
	})

	t.Run("rate", func(t *testing.T) {
		tab := newClientTable(Limits{WebhookConcurrency: 100, WebhookRate: 2, WebhookBurst: 3, WebhookTotal: 100, WebhookClients: 10})
		for i := range 3 {
			r, _ := tab.admit(a, now)
			if r == nil {
				t.Fatalf("request %d of the burst refused", i+1)
			}
			r()
		}
		r, retry := tab.admit(a, now)
		if r != nil || retry != 500*time.Millisecond {
			t.Fatalf("over the burst: admitted %v, retry %s, want a refusal for 500ms", r != nil, retry)
		}
		if r, _ := tab.admit(a, now.Add(500*time.Millisecond)); r == nil {
			t.Fatal("refused once a token was earned")
		}
	})

	t.Run("table bound", func(t *testing.T) {
		tab := newClientTable(Limits{WebhookConcurrency: 10, WebhookRate: 1, WebhookBurst: 1, WebhookTotal: 100, WebhookClients: 2})
		ra, _ := tab.admit(a, now)
		rb, _ := tab.admit(b, now)
		if ra == nil || rb == nil {
			t.Fatal("refused")
		}
		if r, _ := tab.admit(c, now); r != nil {
			t.Fatal("a third address admitted into a full table")
		}
		ra()
		// a's request ended, but its bucket is not full again yet.
		if r, _ := tab.admit(c, now); r != nil {
			t.Fatal("an address dropped before its bucket refilled")
		}
		if r, _ := tab.admit(c, now.Add(time.Second)); r == nil {
			t.Fatal("no room made once a was as good as new")
		}
		if len(tab.clients) > 2 {
			t.Errorf("%d addresses kept, want at most 2", len(tab.clients))
		}
	})

	t.Run("keys", func(t *testing.T) {
		for _, tc := range []struct{ addr, want string }{
			{"192.0.2.1:5", "192.0.2.1/32"},
			{"[::ffff:192.0.2.1]:5", "192.0.2.1/32"},
			{"[2001:db8:1:2:3:4:5:6]:5", "2001:db8:1:2::/64"},
			{"not an address", "invalid Prefix"},
		} {
			if got := clientKey(tc.addr).String(); got != tc.want {
				t.Errorf("clientKey(%q) = %s, want %s", tc.addr, got, tc.want)
			}
		}
	})
}

// newTestServer builds a Server over a catalog in a temp directory.
func newTestServer(t *testing.T, opts Options) *Server {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(t.Context(), "sqlite://"+dir+"/g.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, _, err := catalog.Open(t.Context(), catalog.Options{Dir: dir + "/definitions", DB: db})
	if err != nil {
		t.Fatal(err)
	}
	opts.Catalog = cat
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
