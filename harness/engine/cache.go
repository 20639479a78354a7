package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	httptarget "github.com/gauntlet-eval/gauntlet/harness/target"
)

// The response cache (StartRequest.Cache) answers a model request of a
// test identical to one made before (by any run, on the same database)
// with the answer stored then, and stores every new successful answer.
//
// The key is the SHA-256 of an unambiguous encoding (every field length-
// prefixed, so that no two requests encode alike) of what decides the
// answer: the endpoint's address (without credentials), the model, every
// message (role, content byte for byte, tool calls, the id a tool message
// answers), the tools offered (their JSON definitions), the sampling
// parameters, and the repeat, so that the repeats of a test remain
// distinct samples. The request's timeout and retries are not part of it:
// they bound the request, they do not change the answer.
//
// Only the model under test is cached: its tool-loop requests, and the
// second pass of the regex evaluator (a request that continues the test's
// conversation). A judge (any other request an evaluator makes) is asked
// afresh every time, and failed requests are never stored.

// cacheKeyVersion changes whenever the encoding below does, so that old
// keys are never matched by a different encoding.
const cacheKeyVersion = "gauntlet-cache-1"

// cacheKey returns the response-cache key of a request of repeat to the
// endpoint at baseURL.
func cacheKey(baseURL string, req *harness.ChatRequest, repeat int) string {
	h := sha256.New()
	w := keyWriter{h: h}
	w.str(cacheKeyVersion)
	w.str(baseURL)
	w.str(req.Model)
	w.int(int64(len(req.Messages)))
	for _, m := range req.Messages {
		w.str(m.Role)
		w.str(m.Content)
		w.str(m.ToolCallID)
		w.int(int64(len(m.ToolCalls)))
		for _, c := range m.ToolCalls {
			w.str(c.ID)
			w.str(c.Name)
			w.str(c.Arguments)
		}
	}
	w.int(int64(len(req.Tools)))
	for _, t := range req.Tools {
		// Maps encode with sorted keys: the same definition, the same bytes.
		b, err := json.Marshal(t)
		if err != nil {
			b = []byte(t.Name)
		}
		w.str(string(b))
	}
	w.float(req.Temperature)
	w.float(req.TopP)
	w.int(int64(req.MaxTokens))
	if req.Seed != nil {
		w.int(1)
		w.int(*req.Seed)
	} else {
		w.int(0)
	}
	w.int(int64(repeat))
	// Added after the first encoding, and written only when set, so that
	// the keys of requests without them stay what they were: the
	// reasoning asked for, and the reasoning parts sent back.
	if r := req.Reasoning; r != nil {
		w.str("reasoning")
		w.str(r.Effort)
		w.int(int64(r.BudgetTokens))
	}
	for i, m := range req.Messages {
		if len(m.Parts) == 0 {
			continue
		}
		w.str("parts")
		w.int(int64(i))
		w.int(int64(len(m.Parts)))
		for _, p := range m.Parts {
			w.str(p.Kind)
			w.str(p.Text)
			w.str(p.Signature)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keyWriter writes length-prefixed fields into a hash.
type keyWriter struct {
	h   hash.Hash
	buf [binary.MaxVarintLen64]byte
}

func (w *keyWriter) int(v int64) {
	n := binary.PutVarint(w.buf[:], v)
	w.h.Write(w.buf[:n])
}

func (w *keyWriter) str(s string) {
	w.int(int64(len(s)))
	w.h.Write([]byte(s))
}

func (w *keyWriter) float(f *float64) {
	if f == nil {
		w.int(0)
		return
	}
	w.int(1)
	w.int(int64(math.Float64bits(*f)))
}

// responseCache is a run's side of the response cache: the hits it
// counted and the answers it has yet to store.
type responseCache struct {
	hits atomic.Int64
	mu   sync.Mutex
	todo []runs.CacheEntry
}

// put queues an answer to store; the run's writer stores the queue with
// each batch of results (flush), so cache writes share its goroutine and
// never hold up a test.
func (c *responseCache) put(key string, resp *harness.ChatResponse) {
	c.mu.Lock()
	c.todo = append(c.todo, runs.CacheEntry{Key: key, Response: *resp})
	c.mu.Unlock()
}

// flush stores the queued answers. A failure is logged and costs only
// those entries: the cache never fails a test.
func (r *run) flushCache() {
	c := r.cache
	if c == nil {
		return
	}
	c.mu.Lock()
	todo := c.todo
	c.todo = nil
	c.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	if err := r.e.opts.Runs.SaveCachedResponses(context.Background(), todo); err != nil {
		r.e.log.Warn("answers not stored in the response cache", slog.String("run", r.info.RunID),
			slog.Int("answers", len(todo)), slog.Any("error", err))
	}
}

// cacheHits returns the requests answered from the cache so far.
func (r *run) cacheHits() int {
	if r.cache == nil {
		return r.info.CacheHits
	}
	return r.info.CacheHits + int(r.cache.hits.Load())
}

// cachedModel is the model of one test of a run with the cache on: it
// looks each request up before asking the endpoint.
type cachedModel struct {
	r      *run
	repeat int
	hits   int // this test's hits; a test's requests are sequential
}

// Chat answers from the cache, else asks the run's model and queues a
// successful answer for the cache. A cache read that fails is logged and
// the endpoint is asked.
func (m *cachedModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	r := m.r
	start := time.Now()
	_, _, base := r.e.endpoint(req.Model)
	key := cacheKey(base, req, m.repeat)
	resp, ok, err := r.e.opts.Runs.CachedResponse(ctx, key)
	if err != nil {
		r.e.log.Warn("response cache read failed; asking the model", slog.String("run", r.info.RunID), slog.Any("error", err))
	}
	if ok {
		m.hits++
		r.cache.hits.Add(1)
		if req.OnAttempt != nil {
			req.OnAttempt(harness.Attempt{N: 1, Start: start, Duration: time.Since(start), Usage: resp.Usage, Status: harness.AttemptCached})
		}
		return resp, nil
	}
	resp, err = r.e.opts.Client.Chat(ctx, req)
	if err == nil && resp != nil {
		r.cache.put(key, resp)
	}
	return resp, err
}

// modelFor returns the model that answers a test's tool loop: the run's
// client, or with the cache on a cachedModel over it.
func (r *run) modelFor(j *job) (harness.ChatModel, *cachedModel) {
	if r.box != nil {
		// A second pass continues the conversation with the target.
		return &targetCall{c: r.box, conv: httptarget.ConversationID(r.info.RunID, j.test.ID, j.repeat)}, nil
	}
	if r.cache == nil {
		return r.e.opts.Client, nil
	}
	m := &cachedModel{r: r, repeat: j.repeat}
	return m, m
}
