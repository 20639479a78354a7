package mcptool

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectHTTP opens an MCP session with the server at the record's URL,
// over the streamable HTTP transport: no standalone event stream (a tool
// call needs only the answers to its own requests), no reconnection (a
// broken connection is a dead server, restarted as one), every response
// body bounded by the answer limit.
func (s *server) connectHTTP(ctx context.Context) (*session, error) {
	sess := newSession()
	base := http.DefaultTransport.(*http.Transport).Clone()
	transport := &mcp.StreamableClientTransport{
		Endpoint:             s.cfg.URL,
		HTTPClient:           &http.Client{Transport: &limitTransport{base: base, limit: s.m.opts.MaxAnswerBytes, over: &sess.tooLarge}},
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
		MaxEventSize:         int(min(s.m.opts.MaxAnswerBytes, int64(^uint(0)>>1))),
	}
	cs, err := newClient().Connect(ctx, transport, nil)
	if err != nil {
		if sess.tooLarge.Load() {
			return nil, fmt.Errorf("it sent a response over %s, the answer limit, while starting", byteSize(s.m.opts.MaxAnswerBytes))
		}
		return nil, fmt.Errorf("connect to %s: %w", s.cfg.URL, err)
	}
	sess.watch(cs)
	return sess, nil
}

// limitTransport bounds every response body: past limit bytes a read
// fails, and over is set.
type limitTransport struct {
	base  http.RoundTripper
	limit int64
	over  *atomic.Bool
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitBody{rc: resp.Body, left: t.limit, over: t.over}
	return resp, nil
}

// limitBody is a response body that fails past its limit.
type limitBody struct {
	rc   io.ReadCloser
	left int64
	over *atomic.Bool
}

func (b *limitBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a larger one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			b.over.Store(true)
			return 0, errLineTooLong
		}
		return b.rc.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitBody) Close() error { return b.rc.Close() }
