package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// DefaultModel is the model a server lists, and answers as, when
// Options.Model is empty.
const DefaultModel = "llmtest-model"

// DefaultRetryAfter is the wait a 429 answer asks for when
// Options.RetryAfter is zero.
const DefaultRetryAfter = time.Second

// DefaultHugeBytes is the size of the answers the Huge schedule picks when
// Options.HugeBytes is zero: twice the default limit of harness/llm.
const DefaultHugeBytes = 8 << 20

// maxBody bounds a request body.
const maxBody = 16 << 20

// Options configure a fake endpoint. The zero value is a working,
// deterministic endpoint with no latency and no fault.
type Options struct {
	// Model is the model listed by GET /v1/models and named in answers to
	// requests that name none (default DefaultModel).
	Model string
	// Models are more model names to list.
	Models []string
	// StrictModels makes a request for a model not listed fail with 404
	// and the code "model_not_found", as real endpoints do. Without it any
	// model name is accepted and echoed back.
	StrictModels bool
	// APIKey, when set, must come as "Authorization: Bearer <APIKey>";
	// other requests get a 401.
	APIKey string

	// Respond, when set, is asked first: it gets the decoded request and
	// returns the reply, or nil to leave the answer to the rules of the
	// package documentation. It may also just record the requests it sees.
	// It is called concurrently.
	Respond func(req *Request) *Reply
	// Answers maps a substring of the last user message to the answer
	// text. When several keys match, the longest wins (then the first in
	// byte order).
	Answers map[string]string
	// ToolArguments maps a function name to the arguments of the calls
	// the default behaviour makes to it, instead of guessing them from the
	// prompt.
	ToolArguments map[string]map[string]any

	// Latency delays every chat completion answer.
	Latency time.Duration
	// Jitter adds to Latency a seeded random extra between 0 and Jitter.
	Jitter time.Duration
	// ServerErrors picks the chat completions answered 500.
	ServerErrors Schedule
	// RateLimits picks the chat completions answered 429 with a
	// Retry-After header.
	RateLimits Schedule
	// RetryAfter is the wait 429 answers ask for (default 1 s), sent as
	// Retry-After in whole seconds (rounded up) and as retry-after-ms.
	RetryAfter time.Duration
	// Overloaded picks the chat completions answered as an overloaded
	// provider does, with the Retry-After headers of RateLimits: 529
	// overloaded_error on the Anthropic wire, 503 on the others.
	Overloaded Schedule
	// RPM, when positive, throttles chat requests as a provider does: a
	// bucket of RPMBurst requests (default a second's worth, RPM/60, at
	// least 1) refilled at RPM a minute; a request that finds it empty is
	// answered 429 with Retry-After, retry-after-ms (the wait until a
	// request is let in) and x-ratelimit-limit-requests, -remaining-requests
	// and -reset-requests (until the bucket is full). Stats.Throttled
	// counts them.
	RPM      int
	RPMBurst int
	// MaxInFlight, when positive, answers 429 to a chat request that
	// arrives while that many are being answered.
	MaxInFlight int
	// Timeouts picks the chat completions that never get an answer: the
	// request hangs until the client gives up or the server closes.
	Timeouts Schedule
	// Garbage picks the chat completions answered 200 with a body that is
	// not valid JSON (for a stream, an event cut inside its JSON).
	Garbage Schedule
	// Huge picks the chat completions answered 200 with a valid chat
	// completion whose text is HugeBytes long. The body is generated as it
	// is sent, without a Content-Length, so that a huge answer costs the
	// server no memory and the client learns its size only by reading.
	Huge Schedule
	// HugeBytes is the length of the text of the answers Huge picks
	// (default DefaultHugeBytes); the body is a few hundred bytes longer.
	HugeBytes int64
	// CutStreams picks the streamed answers that stop after their first
	// events, without their end (the connection is closed): a stream cut
	// short, which a client must not take for a whole answer.
	CutStreams Schedule
	// NUL picks the chat completions whose answer text gets a NUL byte
	// (after its first word), as a model may send: a valid answer that
	// storage and scoring must keep byte for byte.
	NUL Schedule
	// EmbeddingDims is the length of the vectors POST /v1/embeddings
	// answers with (default DefaultEmbeddingDims); see Embedding.
	EmbeddingDims int

	// Seed seeds the random choices: the Rate of the schedules and the
	// Jitter. The same seed gives the same faults to the same request
	// numbers.
	Seed uint64
}

// Schedule picks chat completion requests by their number: 1 for the first
// the server receives, counting every chat completion request, retries
// included. A request is picked when any field picks it. When several
// schedules pick the same request, Timeouts wins, then RateLimits, then
// Overloaded, then ServerErrors, then Garbage, then Huge, then NUL.
type Schedule struct {
	// First picks requests 1 to First.
	First int
	// Every picks requests Every, 2·Every, 3·Every...
	Every int
	// Rate picks this fraction of the requests, by a seeded hash of their
	// number.
	Rate float64
}

func (s Schedule) picks(n int64, seed uint64, kind uint64) bool {
	switch {
	case s.First > 0 && n <= int64(s.First):
		return true
	case s.Every > 0 && n%int64(s.Every) == 0:
		return true
	case s.Rate > 0:
		return unit(seed, n, kind) < s.Rate
	}
	return false
}

// unit returns a number in [0, 1) determined by seed, n and kind
// (splitmix64).
func unit(seed uint64, n int64, kind uint64) float64 {
	z := seed ^ uint64(n)*0x9E3779B97F4A7C15 ^ kind*0xBF58476D1CE4E5B9
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

const (
	kindTimeout uint64 = iota + 1
	kindRateLimit
	kindServerError
	kindGarbage
	kindJitter
	kindHuge
	kindNUL
	kindCutStream
	kindOverloaded
)

// Request is a decoded chat completion request, as Options.Respond sees it.
type Request struct {
	// N is the request's number: 1 for the first chat completion the
	// server received.
	N int64
	// Model is the model asked for ("" when none).
	Model string
	// Messages are the conversation, content parts joined into text.
	Messages []harness.Message
	// Tools are the functions offered.
	Tools []harness.FunctionDef
	// Temperature is nil when the request sets none.
	Temperature *float64
	// TopP is top_p; nil when the request sets none.
	TopP *float64
	// Seed is nil when the request sets none.
	Seed *int64
	// MaxTokens is max_tokens, else max_completion_tokens; 0 when unset.
	MaxTokens int
	// Reasoning is the thinking asked for (reasoning_effort, Anthropic's
	// thinking budget, Gemini's thinking budget); nil when none.
	Reasoning *harness.ReasoningParams
	// Stream reports whether the answer was asked for as a stream.
	Stream bool
	// streamUsage: the usage is asked for at the end of the stream
	// (stream_options.include_usage).
	streamUsage bool
	// Header is the request's HTTP header.
	Header http.Header
	// Body is the raw JSON body.
	Body []byte
}

// LastUser returns the content of the last user message, "" when there is
// none.
func (r *Request) LastUser() string {
	if i := r.lastUserIndex(); i >= 0 {
		return r.Messages[i].Content
	}
	return ""
}

func (r *Request) lastUserIndex() int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == harness.RoleUser {
			return i
		}
	}
	return -1
}

// Reply is an answer to a chat completion.
type Reply struct {
	// Content is the answer's text; with a Status, the error message.
	Content string
	// ToolCalls are function calls to answer with; a call with no ID gets
	// one. Arguments default to "{}".
	ToolCalls []harness.ToolCall
	// FinishReason overrides the finish reason: "stop", or "tool_calls"
	// when there are ToolCalls, or "length" when max_tokens cut the text.
	FinishReason string
	// Status, when neither 0 nor 200, makes the answer an OpenAI-style
	// error with this HTTP status and Content as its message.
	Status int
	// Usage overrides the counted usage.
	Usage *harness.Usage

	// cut: the streamed answer stops after its first events.
	cut bool
}

// Stats are a fake endpoint's counters.
type Stats struct {
	// Requests is the number of HTTP requests received, on any path.
	Requests int64
	// ChatCompletions is the number of POST /v1/chat/completions received.
	ChatCompletions int64
	// InFlight is the number of requests being handled now.
	InFlight int64
	// PeakInFlight is the most requests handled at once.
	PeakInFlight int64
	// Statuses counts the answers by HTTP status.
	Statuses map[int]int64
	// Timeouts is the number of requests left without an answer.
	Timeouts int64
	// Garbage is the number of malformed bodies sent.
	Garbage int64
	// Huge is the number of huge answers begun.
	Huge int64
	// HugeBytesSent is the number of body bytes of huge answers written
	// before each was done or its client hung up: far less than Huge times
	// HugeBytes when clients stop reading early.
	HugeBytesSent int64
	// NULs is the number of answers sent with a NUL byte.
	NULs int64
	// Throttled is the number of chat requests answered 429 by the RPM
	// and MaxInFlight limits.
	Throttled int64
	// ToolCalls is the number of answers that called tools.
	ToolCalls int64
	// CutStreams is the number of streamed answers cut short.
	CutStreams int64
	// Embeddings is the number of POST /v1/embeddings received, and
	// EmbeddedTexts the number of texts embedded by those that succeeded.
	Embeddings, EmbeddedTexts int64
}

// Handler is the fake endpoint as an http.Handler. Its routes start with
// /v1. It is safe for concurrent use.
type Handler struct {
	opts      Options
	answerKey []string // Options.Answers' keys, longest first

	closeOnce sync.Once
	closed    chan struct{}

	requests, chats, inFlight, peak  atomic.Int64
	timeouts, garbage, toolCallsSent atomic.Int64
	huge, hugeSent, nuls             atomic.Int64
	cutStreams                       atomic.Int64
	chatSeq                          atomic.Int64
	embeddings, embeddedTexts        atomic.Int64
	embeddingsDown                   atomic.Bool
	mu                               sync.Mutex
	statuses                         map[int]int64
	throttle                         *throttle // Options.RPM and MaxInFlight; nil without
	throttledN                       atomic.Int64
}

// NewHandler returns the fake endpoint as an http.Handler, to serve on an
// address of one's choice. Close it before shutting the server down, so
// that hung requests return.
func NewHandler(opts Options) *Handler {
	if opts.Model == "" {
		opts.Model = DefaultModel
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = DefaultRetryAfter
	}
	if opts.HugeBytes <= 0 {
		opts.HugeBytes = DefaultHugeBytes
	}
	h := &Handler{opts: opts, closed: make(chan struct{}), statuses: map[int]int64{}, throttle: newThrottle(opts)}
	for k := range opts.Answers {
		h.answerKey = append(h.answerKey, k)
	}
	sortLongestFirst(h.answerKey)
	return h
}

// Close releases the requests hung by the Timeouts schedule and makes new
// ones return at once. It is idempotent.
func (h *Handler) Close() { h.closeOnce.Do(func() { close(h.closed) }) }

// Stats returns a snapshot of the counters.
func (h *Handler) Stats() Stats {
	h.mu.Lock()
	st := make(map[int]int64, len(h.statuses))
	for k, v := range h.statuses {
		st[k] = v
	}
	h.mu.Unlock()
	return Stats{
		Requests:        h.requests.Load(),
		ChatCompletions: h.chats.Load(),
		InFlight:        h.inFlight.Load(),
		PeakInFlight:    h.peak.Load(),
		Statuses:        st,
		Timeouts:        h.timeouts.Load(),
		Garbage:         h.garbage.Load(),
		Huge:            h.huge.Load(),
		HugeBytesSent:   h.hugeSent.Load(),
		NULs:            h.nuls.Load(),
		Throttled:       h.throttledN.Load(),
		ToolCalls:       h.toolCallsSent.Load(),
		CutStreams:      h.cutStreams.Load(),
		Embeddings:      h.embeddings.Load(),
		EmbeddedTexts:   h.embeddedTexts.Load(),
	}
}

// ResetStats sets the counters back to zero (PeakInFlight to the number in
// flight now). Request numbers, which the fault schedules use, go on.
func (h *Handler) ResetStats() {
	h.requests.Store(0)
	h.chats.Store(0)
	h.peak.Store(h.inFlight.Load())
	h.timeouts.Store(0)
	h.garbage.Store(0)
	h.huge.Store(0)
	h.hugeSent.Store(0)
	h.nuls.Store(0)
	h.throttledN.Store(0)
	h.toolCallsSent.Store(0)
	h.cutStreams.Store(0)
	h.embeddings.Store(0)
	h.embeddedTexts.Store(0)
	h.mu.Lock()
	clear(h.statuses)
	h.mu.Unlock()
}

// ServeHTTP answers GET /v1/models and POST /v1/chat/completions.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	n := h.inFlight.Add(1)
	defer h.inFlight.Add(-1)
	for {
		p := h.peak.Load()
		if n <= p || h.peak.CompareAndSwap(p, n) {
			break
		}
	}
	rec := &recorder{ResponseWriter: w}
	hung := h.route(rec, r)
	switch {
	case hung:
		h.timeouts.Add(1)
	case rec.status != 0:
		h.mu.Lock()
		h.statuses[rec.status]++
		h.mu.Unlock()
	}
}

// route serves one request; it reports true when it left the request
// without an answer.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) bool {
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path == "/v1/models" && r.Header.Get("Anthropic-Version") != "" {
		return h.serveAnthropicModels(w, r)
	}
	switch path {
	case "/v1/models", "/v1/chat/completions", "/v1/embeddings":
	default:
		if path == geminiModelsPath {
			h.serveGeminiModels(w, r)
			return false
		}
		if f := otherWire(path); f != nil {
			if h.opts.APIKey != "" && !f.authorized(r, h.opts.APIKey) {
				f.writeError(w, http.StatusUnauthorized, "Incorrect or missing API key.")
				return false
			}
			if r.Method != http.MethodPost {
				w.Header().Set("Allow", http.MethodPost)
				f.writeError(w, http.StatusMethodNotAllowed, "Use POST for "+path+".")
				return false
			}
			return h.serveChat(w, r, f)
		}
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("Unknown request URL: %s %s. llmtest serves GET /v1/models, POST /v1/chat/completions and POST /v1/embeddings.", r.Method, r.URL.Path))
		return false
	}
	if h.opts.APIKey != "" && !(openaiWire{}).authorized(r, h.opts.APIKey) {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect or missing API key.")
		return false
	}
	if path == "/v1/models" {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "Use GET for /v1/models.")
			return false
		}
		h.serveModels(w)
		return false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "Use POST for "+path+".")
		return false
	}
	if path == "/v1/embeddings" {
		h.serveEmbeddings(w, r)
		return false
	}
	return h.serveChat(w, r, openaiWire{})
}

// otherWire returns the format of the chat API of another provider kind
// served at path, nil when path is none.
func otherWire(path string) wireFormat {
	if path == "/v1/messages" {
		return anthropicWire{}
	}
	if f, ok := geminiWireFor(path); ok {
		return f
	}
	return nil
}

func (h *Handler) models() []string {
	return append([]string{h.opts.Model}, h.opts.Models...)
}

// refuseModel answers 404 model_not_found, as real endpoints do, when
// Options.StrictModels is set and model is named but not listed; it
// reports whether it did.
func (h *Handler) refuseModel(w http.ResponseWriter, f wireFormat, model string) bool {
	if !h.opts.StrictModels || model == "" || contains(h.models(), model) {
		return false
	}
	msg := fmt.Sprintf("The model `%s` does not exist.", model)
	if _, ok := f.(openaiWire); ok {
		writeErrorParam(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model", msg)
	} else {
		f.writeError(w, http.StatusNotFound, msg)
	}
	return true
}

func (h *Handler) serveModels(w http.ResponseWriter) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, m := range h.models() {
		list.Data = append(list.Data, model{ID: m, Object: "model", OwnedBy: "llmtest"})
	}
	writeJSON(w, http.StatusOK, list)
}

// A wireFormat is one provider kind's chat API as the fake speaks it: how
// a request is read and how an answer, an error, a cut body and a huge
// answer are written. serveChat applies the same schedules, latency and
// answers to every format, so that a test gets the same behaviour from
// each kind.
type wireFormat interface {
	// authorized reports whether r carries Options.APIKey the way the
	// kind sends it.
	authorized(r *http.Request, key string) bool
	// decode reads a request; its errors are the messages of 400 answers.
	// stream reports whether the answer is asked for as a stream.
	decode(r *http.Request, body []byte) (req *Request, stream bool, err error)
	// writeError answers an error of the kind's shape.
	writeError(w http.ResponseWriter, status int, msg string)
	// writeRateLimit answers a rate limit (already given its Retry-After
	// headers).
	writeRateLimit(w http.ResponseWriter, msg string)
	// writeAnswer answers rep, streamed or not.
	writeAnswer(h *Handler, w http.ResponseWriter, req *Request, rep *Reply, stream bool)
	// writeGarbage answers 200 with a body cut short inside its JSON (a
	// stream's when req.Stream).
	writeGarbage(w http.ResponseWriter, req *Request)
	// writeHuge answers 200 with a valid answer whose text is
	// Options.HugeBytes long (see Handler.writeHuge).
	writeHuge(h *Handler, w http.ResponseWriter, r *http.Request, req *Request)
}

// serveChat answers one chat request of format f; it reports true when it
// left the request without an answer.
func (h *Handler) serveChat(w http.ResponseWriter, r *http.Request, f wireFormat) bool {
	h.chats.Add(1)
	n := h.chatSeq.Add(1)
	body, ok := readBody(w, r)
	if !ok {
		return false
	}
	req, stream, err := f.decode(r, body)
	var pe *paramError
	switch {
	case errors.As(err, &pe):
		writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", pe.code, pe.param, pe.msg)
		return false
	case err != nil:
		f.writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	req.N, req.Header = n, r.Header
	if h.refuseModel(w, f, req.Model) {
		return false
	}
	refused, release := h.throttled(w, f)
	if refused {
		return false
	}
	if release != nil {
		defer release()
	}

	if d := h.latency(n); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return true
		case <-h.closed:
			t.Stop()
			f.writeError(w, http.StatusServiceUnavailable, "The server is shutting down.")
			return false
		}
	}

	seed := h.opts.Seed
	switch {
	case h.opts.Timeouts.picks(n, seed, kindTimeout):
		select {
		case <-r.Context().Done():
		case <-h.closed:
		}
		return true
	case h.opts.RateLimits.picks(n, seed, kindRateLimit):
		ra := h.opts.RetryAfter
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(ra.Seconds())), 10))
		w.Header().Set("Retry-After-Ms", strconv.FormatInt(ra.Milliseconds(), 10))
		f.writeRateLimit(w, fmt.Sprintf("Rate limit reached (llmtest). Please try again in %v.", ra))
		return false
	case h.opts.Overloaded.picks(n, seed, kindOverloaded):
		h.setRetryAfter(w)
		writeOverloaded(w, f, "Overloaded (llmtest).")
		return false
	case h.opts.ServerErrors.picks(n, seed, kindServerError):
		f.writeError(w, http.StatusInternalServerError, "The server had an error while processing your request (llmtest fault).")
		return false
	case h.opts.Garbage.picks(n, seed, kindGarbage):
		h.garbage.Add(1)
		f.writeGarbage(w, req)
		return false
	case h.opts.Huge.picks(n, seed, kindHuge):
		h.huge.Add(1)
		f.writeHuge(h, w, r, req)
		return false
	}

	rep := h.answer(req)
	if rep.Status != 0 && rep.Status != http.StatusOK {
		f.writeError(w, rep.Status, rep.Content)
		return false
	}
	if stream && h.opts.CutStreams.picks(n, seed, kindCutStream) {
		// Hijack and close the connection once the first events are out:
		// a stream that ends without its end.
		h.cutStreams.Add(1)
		rep.cut = true
	}
	if h.opts.NUL.picks(n, seed, kindNUL) {
		h.nuls.Add(1)
		rep.Content = withNUL(rep.Content)
	}
	if len(rep.ToolCalls) > 0 {
		h.toolCallsSent.Add(1)
	}
	f.writeAnswer(h, w, req, rep, stream)
	return false
}

// setRetryAfter sets the headers that ask a client to wait
// Options.RetryAfter, as a 429 answer does: Retry-After in whole seconds
// (rounded up) and retry-after-ms.
func (h *Handler) setRetryAfter(w http.ResponseWriter) {
	ra := h.opts.RetryAfter
	w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(ra.Seconds())), 10))
	w.Header().Set("Retry-After-Ms", strconv.FormatInt(ra.Milliseconds(), 10))
}

// overloadWriter is a wireFormat with its own answer to an overloaded
// provider (Anthropic's 529); the others answer 503.
type overloadWriter interface {
	writeOverloaded(w http.ResponseWriter, msg string)
}

// writeOverloaded answers as an overloaded provider of format f does.
func writeOverloaded(w http.ResponseWriter, f wireFormat, msg string) {
	if o, ok := f.(overloadWriter); ok {
		o.writeOverloaded(w, msg)
		return
	}
	f.writeError(w, http.StatusServiceUnavailable, msg)
}

// paramError is a 400 of the chat completions API that names the
// parameter at fault.
type paramError struct{ param, code, msg string }

func (e *paramError) Error() string { return e.msg }

// openaiWire is the chat completions API (POST /v1/chat/completions).
type openaiWire struct{}

func (openaiWire) authorized(r *http.Request, key string) bool {
	return r.Header.Get("Authorization") == "Bearer "+key
}

func (openaiWire) decode(_ *http.Request, body []byte) (*Request, bool, error) {
	req, wr, err := decodeRequest(body)
	if err != nil {
		return nil, false, err
	}
	req.Stream = wr.Stream
	req.streamUsage = wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage
	return req, wr.Stream, nil
}

func (openaiWire) writeError(w http.ResponseWriter, status int, msg string) {
	writeError(w, status, errorType(status), "", msg)
}

func (openaiWire) writeRateLimit(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", msg)
}

func (openaiWire) writeAnswer(h *Handler, w http.ResponseWriter, req *Request, rep *Reply, stream bool) {
	if stream {
		h.streamCompletion(w, req, h.completion(req, rep), rep.cut)
		return
	}
	writeJSON(w, http.StatusOK, h.completion(req, rep))
}

func (openaiWire) writeGarbage(w http.ResponseWriter, req *Request) {
	if req.Stream {
		// A stream whose second event is cut inside its JSON.
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-llmtest-%d\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"The \"},\"finish_reason\":null}]}\n\n", req.N)
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-llmtest-%d\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ans\n\n", req.N)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, `{"id":"chatcmpl-llmtest-%d","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"The ans`, req.N)
}

func (openaiWire) writeHuge(h *Handler, w http.ResponseWriter, r *http.Request, req *Request) {
	h.writeHuge(w, r, req)
}

// hugeFiller is the text a huge answer repeats: ASCII, so that JSON needs
// no escape, and 32 bytes, a divisor of the chunk written at a time.
const hugeFiller = "All work and no play makes Jack "

// writeHuge answers with a valid chat completion whose text is
// Options.HugeBytes long, written in chunks as it goes, until it is done,
// the client hangs up or the handler is closed.
func (h *Handler) writeHuge(w http.ResponseWriter, r *http.Request, req *Request) {
	model := req.Model
	if model == "" {
		model = h.opts.Model
	}
	name, _ := json.Marshal(model)
	size := h.opts.HugeBytes
	tokens := (size + 3) / 4
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		n, err := w.Write(b)
		h.hugeSent.Add(int64(n))
		return err == nil
	}
	head := fmt.Sprintf(`{"id":"chatcmpl-llmtest-%d","object":"chat.completion","created":%d,"model":%s,`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":"`, req.N, time.Now().Unix(), name)
	if !write([]byte(head)) {
		return
	}
	if !h.writeFiller(r, size, func(c string) bool { return write([]byte(c)) }) {
		return
	}
	write([]byte(fmt.Sprintf(`"},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
		promptTokens(req.Messages), tokens, int64(promptTokens(req.Messages))+tokens)))
}

// hugeChunk is the filler text of a huge answer, written 32 KiB at a time.
var hugeChunk = strings.Repeat(hugeFiller, 32<<10/len(hugeFiller))

// writeFiller writes size bytes of filler text with write, a chunk at a
// time, until it is done, the client hangs up or the handler is closed;
// it reports false when it stopped early. Every wire's huge answer is
// made of it.
func (h *Handler) writeFiller(r *http.Request, size int64, write func(chunk string) bool) bool {
	for left := size; left > 0; {
		select {
		case <-r.Context().Done():
			return false
		case <-h.closed:
			return false
		default:
		}
		c := hugeChunk[:min(int64(len(hugeChunk)), left)]
		if !write(c) {
			return false
		}
		left -= int64(len(c))
	}
	return true
}

// withNUL puts a NUL byte after the first word of s (at its end when it
// has one word, alone when s is empty).
func withNUL(s string) string {
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i] + "\x00" + s[i:]
	}
	return s + "\x00"
}

func (h *Handler) latency(n int64) time.Duration {
	d := h.opts.Latency
	if j := h.opts.Jitter; j > 0 {
		d += time.Duration(unit(h.opts.Seed, n, kindJitter) * float64(j))
	}
	return d
}

// completion builds the wire answer of a reply.
func (h *Handler) completion(req *Request, rep *Reply) wireResponse {
	model := req.Model
	if model == "" {
		model = h.opts.Model
	}
	content := rep.Content
	finish := "stop"
	if req.MaxTokens > 0 && CountTokens(content) > req.MaxTokens {
		content = string([]rune(content)[:req.MaxTokens*4])
		finish = "length"
	}
	msg := wireOutMessage{Role: "assistant"}
	if content != "" || len(rep.ToolCalls) == 0 {
		msg.Content = &content
	}
	completionTokens := CountTokens(content)
	for i, tc := range rep.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", req.N, i)
		}
		args := tc.Arguments
		if args == "" {
			args = "{}"
		}
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: id, Type: "function", Function: wireFunctionCall{Name: tc.Name, Arguments: args}})
		completionTokens += CountTokens(tc.Name) + CountTokens(args)
		finish = "tool_calls"
	}
	if rep.FinishReason != "" {
		finish = rep.FinishReason
	}
	usage := harness.Usage{PromptTokens: promptTokens(req.Messages), CompletionTokens: completionTokens}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	if rep.Usage != nil {
		usage = *rep.Usage
	}
	return wireResponse{
		ID:                fmt.Sprintf("chatcmpl-llmtest-%d", req.N),
		Object:            "chat.completion",
		Created:           time.Now().Unix(),
		Model:             model,
		Choices:           []wireChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:             wireUsageOf(usage),
		SystemFingerprint: "llmtest",
	}
}

// CountTokens is the fake's token count of a text: one token per four
// characters, rounded up.
func CountTokens(s string) int {
	n := 0
	for range s {
		n++
	}
	return (n + 3) / 4
}

// promptTokens counts the tokens of a conversation: its contents and its
// tool calls' names and arguments.
func promptTokens(msgs []harness.Message) int {
	t := 0
	for _, m := range msgs {
		t += CountTokens(m.Content)
		for _, tc := range m.ToolCalls {
			t += CountTokens(tc.Name) + CountTokens(tc.Arguments)
		}
	}
	return t
}

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "requests"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the writer's Flush and Hijack.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeErrorParam(w, status, typ, code, "", msg)
}

// writeErrorParam writes OpenAI's error body:
// {"error": {"message", "type", "param", "code"}}.
func writeErrorParam(w http.ResponseWriter, status int, typ, code, param, msg string) {
	type apiError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	e := apiError{Message: msg, Type: typ}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{e})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Server is a fake endpoint listening on loopback, like an
// httptest.Server. Its Handler's counters are promoted: srv.Stats().
type Server struct {
	// URL is the base URL of the API, http://127.0.0.1:PORT/v1.
	URL string
	*Handler
	ts *httptest.Server
}

// NewServer starts a fake endpoint on a loopback port. Close it when done.
func NewServer(opts Options) *Server {
	h := NewHandler(opts)
	ts := httptest.NewServer(h)
	return &Server{URL: ts.URL + "/v1", Handler: h, ts: ts}
}

// Close releases hung requests, then shuts the server down and waits for
// the requests in flight to finish.
func (s *Server) Close() {
	s.Handler.Close()
	s.ts.Close()
}

// readBody reads a request's body, up to maxBody bytes; when it cannot, it
// answers with the error (413 for a body too large) and reports false.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "The request body is too large.")
		} else {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "", "Could not read the request body: "+err.Error())
		}
		return nil, false
	}
	return body, true
}
