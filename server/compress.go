package server

import (
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// minGzipSize is the smallest body worth compressing: below it, gzip's
// header and the work cost more than they save. A streamed answer is
// compressed from its first flush whatever its size.
const minGzipSize = 1024

// gzipWriters are reused: each holds about 800 KB of compressor state.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// compress gzips the answers of clients that accept gzip
// (Accept-Encoding), when the answer is text of some kind (JSON, YAML,
// CSV, HTML, JavaScript...) and at least minGzipSize bytes, or streamed.
// Answers already encoded, partial (206) or without a body pass as they
// are, and so do HEAD and Range requests. Every answer says Vary:
// Accept-Encoding, so that caches keep the two forms apart.
//
// A handler that flushes (a streamed export, for instance) still streams:
// a flush decides the encoding if it is not decided yet, then flushes the
// compressor and the connection, so that what was written so far reaches
// the client.
func compress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Accept-Encoding")
		if r.Method == http.MethodHead || r.Header.Get("Range") != "" || !acceptsGzip(r.Header.Values("Accept-Encoding")) {
			next.ServeHTTP(w, r)
			return
		}
		gw := &gzipWriter{ResponseWriter: w}
		defer gw.finish()
		next.ServeHTTP(gw, r)
	})
}

// acceptsGzip reports whether Accept-Encoding values accept gzip: named,
// or "*", with a weight above zero.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(item, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "*" {
				continue
			}
			q := 1.0
			if name, value, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.EqualFold(strings.TrimSpace(name), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
					q = f
				}
			}
			if q > 0 {
				return true
			}
		}
	}
	return false
}

// gzipWriter holds the start of a body until it knows whether to
// compress: minGzipSize bytes, a flush, or the end of the handler.
type gzipWriter struct {
	http.ResponseWriter
	status  int    // the handler's status; 0 until it is known
	buf     []byte // body written before the decision
	decided bool
	gz      *gzip.Writer // non-nil when compressing
}

// WriteHeader records the status; it is sent once the encoding is
// decided. Informational (1xx) statuses go through at once.
func (w *gzipWriter) WriteHeader(code int) {
	if code < http.StatusOK {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.status != 0 {
		return
	}
	w.status = code
	if code == http.StatusNoContent || code == http.StatusNotModified {
		w.decide(false)
	}
}

func (w *gzipWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.decided {
		if w.gz != nil {
			return w.gz.Write(p)
		}
		return w.ResponseWriter.Write(p)
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) < minGzipSize {
		return len(p), nil
	}
	if err := w.decide(w.compressible()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush sends what was written so far.
func (w *gzipWriter) Flush() {
	if !w.decided {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		if w.decide(w.compressible()) != nil {
			return
		}
	}
	if w.gz != nil && w.gz.Flush() != nil {
		return
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the connection's writer.
func (w *gzipWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// compressible reports whether the answer, as known now, is worth
// compressing. It sets the content type net/http would have sniffed from
// the body: once compressed, the body would be sniffed as gzip.
func (w *gzipWriter) compressible() bool {
	h := w.Header()
	if h.Get("Content-Encoding") != "" || h.Get("Content-Range") != "" || w.status == http.StatusPartialContent {
		return false
	}
	ct, present := h["Content-Type"]
	if !present {
		if len(w.buf) == 0 {
			return false
		}
		ct = []string{http.DetectContentType(w.buf)}
		h["Content-Type"] = ct
	}
	if len(ct) == 0 {
		return false
	}
	mt, _, _ := strings.Cut(strings.ToLower(ct[0]), ";")
	mt = strings.TrimSpace(mt)
	return strings.HasPrefix(mt, "text/") ||
		strings.Contains(mt, "json") || strings.Contains(mt, "javascript") ||
		strings.Contains(mt, "xml") || strings.Contains(mt, "yaml")
}

// decide sends the header, compressed or not, then the body held so far.
func (w *gzipWriter) decide(gz bool) error {
	w.decided = true
	if gz {
		h := w.Header()
		h.Del("Content-Length")
		h.Set("Content-Encoding", "gzip")
		w.gz = gzipWriters.Get().(*gzip.Writer)
		w.gz.Reset(w.ResponseWriter)
	}
	w.ResponseWriter.WriteHeader(w.status)
	buf := w.buf
	w.buf = nil
	if len(buf) == 0 {
		return nil
	}
	var err error
	if w.gz != nil {
		_, err = w.gz.Write(buf)
	} else {
		_, err = w.ResponseWriter.Write(buf)
	}
	return err
}

// finish ends the body once the handler returned.
func (w *gzipWriter) finish() {
	if !w.decided {
		if w.status == 0 {
			// Nothing written: net/http answers 200 with no body.
			return
		}
		w.decide(false)
	}
	if w.gz != nil {
		w.gz.Close()
		w.gz.Reset(nil)
		gzipWriters.Put(w.gz)
		w.gz = nil
	}
}
