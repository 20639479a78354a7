package server

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"deflate, gzip;q=0.5"}, true},
		{[]string{"br", "GZIP"}, true},
		{[]string{"*"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.0, br"}, false},
		{[]string{"identity"}, false},
		{[]string{"x-gzip-ish"}, false},
	} {
		if got := acceptsGzip(tc.values); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.values, got, tc.want)
		}
	}
}

// TestCompressDecisions serves bodies of each kind through the middleware.
func TestCompressDecisions(t *testing.T) {
	t.Parallel()
	big := strings.Repeat(`{"id":"x","name":"y"},`, 200)
	cases := []struct {
		name    string
		handler http.HandlerFunc
		header  []string // request header pairs
		gzipped bool
	}{
		{"big JSON", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, big)
		}, []string{"Accept-Encoding", "gzip"}, true},
		{"big JSON without Accept-Encoding", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, big)
		}, nil, false},
		{"big text, type sniffed", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, strings.Repeat("plain text ", 200))
		}, []string{"Accept-Encoding", "gzip"}, true},
		{"tiny JSON", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"success":true}`)
		}, []string{"Accept-Encoding", "gzip"}, false},
		{"an image", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			io.WriteString(w, big)
		}, []string{"Accept-Encoding", "gzip"}, false},
		{"already encoded", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "br")
			io.WriteString(w, big)
		}, []string{"Accept-Encoding", "gzip, br"}, false},
		{"a range request", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, big)
		}, []string{"Accept-Encoding", "gzip", "Range", "bytes=0-10"}, false},
		{"gzip refused with q=0", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, big)
		}, []string{"Accept-Encoding", "gzip;q=0"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/x", nil)
			for i := 0; i+1 < len(tc.header); i += 2 {
				req.Header.Set(tc.header[i], tc.header[i+1])
			}
			compress(tc.handler).ServeHTTP(rec, req)
			if got := rec.Header().Get("Content-Encoding") == "gzip"; got != tc.gzipped {
				t.Fatalf("gzipped %v, want %v (Content-Encoding %q)", got, tc.gzipped, rec.Header().Get("Content-Encoding"))
			}
			if !strings.Contains(rec.Header().Get("Vary"), "Accept-Encoding") {
				t.Errorf("Vary %q", rec.Header().Get("Vary"))
			}
			body := rec.Body.Bytes()
			if tc.gzipped {
				if rec.Header().Get("Content-Length") != "" {
					t.Errorf("Content-Length %q on a compressed body", rec.Header().Get("Content-Length"))
				}
				zr, err := gzip.NewReader(rec.Body)
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			want := httptest.NewRecorder()
			tc.handler(want, httptest.NewRequest(http.MethodGet, "/x", nil))
			if string(body) != want.Body.String() {
				t.Fatalf("body differs from the handler's: %.80q", body)
			}
		})
	}

	t.Run("no body statuses", func(t *testing.T) {
		for _, status := range []int{http.StatusNoContent, http.StatusNotModified} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/x", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			compress(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
			})).ServeHTTP(rec, req)
			if rec.Code != status || rec.Body.Len() != 0 || rec.Header().Get("Content-Encoding") != "" {
				t.Errorf("%d: got %d, %d bytes, Content-Encoding %q", status, rec.Code, rec.Body.Len(), rec.Header().Get("Content-Encoding"))
			}
		}
	})
}

// TestCompressStreams checks that a flushing handler still streams through
// the compressor: the client reads each line, decompressed, before the
// handler writes the next one.
func TestCompressStreams(t *testing.T) {
	t.Parallel()
	got := make(chan string)
	const lines = 3
	failed := make(chan string, 1)
	hs := httptest.NewServer(compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for i := range lines {
			io.WriteString(w, `{"line":`+string(rune('0'+i))+"}\n")
			http.NewResponseController(w).Flush()
			select {
			case line := <-got:
				if want := `{"line":` + string(rune('0'+i)) + "}\n"; line != want {
					failed <- "client read " + line + ", want " + want
					return
				}
			case <-time.After(10 * time.Second):
				failed <- "the client did not receive a flushed line"
				return
			case <-r.Context().Done():
				return
			}
		}
	})))
	defer hs.Close()

	req, _ := http.NewRequest(http.MethodGet, hs.URL, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", res.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(zr)
	for range lines {
		line, err := br.ReadString('\n')
		if err != nil {
			select {
			case msg := <-failed:
				t.Fatal(msg)
			default:
			}
			t.Fatalf("read: %v", err)
		}
		select {
		case got <- line:
		case msg := <-failed:
			t.Fatal(msg)
		}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the lines: %q, %v", rest, err)
	}
	select {
	case msg := <-failed:
		t.Fatal(msg)
	default:
	}
}
