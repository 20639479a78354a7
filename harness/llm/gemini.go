package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/internal/limitio"
)

// geminiCallPrefix starts the ids this package gives to Gemini's function
// calls that came without one, so that a later request can tell them
// from the provider's own ids (which it sends back) and leave them out.
const geminiCallPrefix = "gemini-call-"

// geminiNoKey is the API key the SDK is given when Options has none: it
// insists on a key, and without one it would read GEMINI_API_KEY or
// GOOGLE_API_KEY from the environment. The transport removes it from the
// request, so that no key at all is sent.
const geminiNoKey = "llm-no-key"

// geminiBackend speaks Google's Gemini API (generateContent) through the
// official SDK, google.golang.org/genai.
type geminiBackend struct {
	models *genai.Models
	scrub  func(string) string
}

// newGemini returns the backend of the gemini kind. Everything the SDK
// could take from the environment (key, base URL, Vertex AI) is given
// explicitly; the SDK's own retries stay off (they are off unless asked
// for), and so does its automatic continuation of cut streams.
func newGemini(opts Options, hc *http.Client) (backend, error) {
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	client := *hc
	client.Transport = &geminiTransport{base: rt, limit: opts.MaxResponseBytes, keyless: opts.APIKey == ""}
	key := opts.APIKey
	if key == "" {
		key = geminiNoKey
	}
	gc, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  &client,
		HTTPOptions: genai.HTTPOptions{BaseURL: opts.BaseURL, APIVersion: "v1beta"},
	})
	if err != nil {
		return nil, errors.New(scrubKey(err.Error(), opts.APIKey))
	}
	return &geminiBackend{models: gc.Models, scrub: func(s string) string { return scrubKey(s, opts.APIKey) }}, nil
}

// scrubKey removes key from s (see Client.scrub).
func scrubKey(s, key string) string {
	if len(key) >= 4 {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	return s
}

// attemptSlotKey is the context key of the attemptSlot of an attempt.
type attemptSlotKey struct{}

// attemptSlot is where geminiTransport records what classify needs and
// the SDK does not return: the HTTP response of an attempt (its status
// and headers) and the first error reading its body (the SDK's stream
// parser reports a body cut by the size limit as a malformed event before
// it reports why it was cut).
type attemptSlot struct {
	hres    **http.Response
	readErr error
}

// withSlot returns ctx carrying a new slot for an attempt that stores its
// response in *hres.
func withSlot(ctx context.Context, hres **http.Response) (context.Context, *attemptSlot) {
	slot := &attemptSlot{hres: hres}
	return context.WithValue(ctx, attemptSlotKey{}, slot), slot
}

// geminiTransport is the HTTP transport under the SDK. It records each
// response in the attempt's slot, bounds the body of every response (the
// SDK reads bodies whole), keeps a copy of an error response's body for
// classify (the SDK consumes it), and removes the placeholder key when the
// client has none.
type geminiTransport struct {
	base    http.RoundTripper
	limit   int64
	keyless bool
}

// RoundTrip sends req through the base transport and prepares its
// response for the SDK and for classify.
func (t *geminiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.keyless {
		req = req.Clone(req.Context())
		req.Header.Del("x-goog-api-key")
	}
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	slot, _ := req.Context().Value(attemptSlotKey{}).(*attemptSlot)
	if slot != nil {
		*slot.hres = res
	}
	if t.limit > 0 {
		if res.ContentLength > t.limit {
			res.Body.Close()
			res.Body = http.NoBody
			return nil, &tooLargeError{t.limit}
		}
		res.Body = limitio.New(res.Body, t.limit, &tooLargeError{t.limit})
	}
	if slot != nil {
		res.Body = &slotBody{ReadCloser: res.Body, slot: slot}
	}
	if res.StatusCode >= 400 {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(raw))
		if slot != nil {
			cp := *res
			cp.Body = io.NopCloser(bytes.NewReader(raw))
			if d, ok := retryDelay(raw); ok && cp.Header.Get("Retry-After") == "" && cp.Header.Get("Retry-After-Ms") == "" {
				cp.Header = cp.Header.Clone()
				cp.Header.Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
			}
			*slot.hres = &cp
		}
	}
	return res, nil
}

// retryDelay reads the wait Gemini asks for in the body of a 429 rather
// than in a header: the retryDelay ("37s") of a google.rpc.RetryInfo among
// the error's details.
func retryDelay(body []byte) (time.Duration, bool) {
	var e struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return 0, false
	}
	for _, d := range e.Error.Details {
		if !strings.HasSuffix(d.Type, "google.rpc.RetryInfo") || d.RetryDelay == "" {
			continue
		}
		if v, err := time.ParseDuration(d.RetryDelay); err == nil && v > 0 {
			return v, true
		}
	}
	return 0, false
}

// slotBody is a response body that records its first read error, other
// than its end, in the attempt's slot.
type slotBody struct {
	io.ReadCloser
	slot *attemptSlot
}

// Read reads the body, recording its first error.
func (b *slotBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.slot.readErr == nil {
		b.slot.readErr = err
	}
	return n, err
}

// prepare translates req once; each attempt sends it, streamed when
// req.Stream is set, and translates the answer.
func (b *geminiBackend) prepare(model string, req *harness.ChatRequest) (attemptFunc, error) {
	contents, cfg, err := geminiRequest(model, req)
	if err != nil {
		return nil, err
	}
	turn := 1
	for _, m := range req.Messages {
		if m.Role == harness.RoleAssistant {
			turn++
		}
	}
	return func(actx context.Context, n int, hres **http.Response) (*harness.ChatResponse, error) {
		ctx, slot := withSlot(actx, hres)
		if req.Stream {
			return b.stream(ctx, actx, slot, model, contents, cfg, turn)
		}
		gr, err := b.models.GenerateContent(ctx, model, contents, cfg)
		if err != nil {
			return nil, b.attemptError(actx, slot, err)
		}
		resp, err := geminiResponse([]*genai.GenerateContentResponse{gr}, model, turn)
		if err != nil {
			return nil, b.malformed(*hres, err)
		}
		return resp, nil
	}, nil
}

// stream sends one attempt as streamGenerateContent (server-sent events)
// and merges its chunks into one answer, timing its first token. A stream
// that ends before a chunk gave the finish reason was cut short: it is
// malformed.
func (b *geminiBackend) stream(ctx, actx context.Context, slot *attemptSlot, model string, contents []*genai.Content,
	cfg *genai.GenerateContentConfig, turn int) (*harness.ChatResponse, error) {
	hres := slot.hres
	start := time.Now()
	var ttft time.Duration
	var chunks []*genai.GenerateContentResponse
	for chunk, err := range b.models.GenerateContentStream(ctx, model, contents, cfg) {
		if err != nil {
			return nil, b.attemptError(actx, slot, err)
		}
		if ttft == 0 && hasContent(chunk) {
			ttft = max(time.Since(start), time.Nanosecond)
		}
		chunks = append(chunks, chunk)
	}
	if !finished(chunks) {
		return nil, b.malformed(*hres, errors.New("the stream ended before its finish reason"))
	}
	resp, err := geminiResponse(chunks, model, turn)
	if err != nil {
		return nil, b.malformed(*hres, err)
	}
	resp.TTFT = ttft
	return resp, nil
}

// hasContent reports whether a chunk carries a token: text, thought or a
// function call.
func hasContent(chunk *genai.GenerateContentResponse) bool {
	if chunk == nil || len(chunk.Candidates) == 0 || chunk.Candidates[0] == nil || chunk.Candidates[0].Content == nil {
		return false
	}
	for _, p := range chunk.Candidates[0].Content.Parts {
		if p != nil && (p.Text != "" || p.FunctionCall != nil) {
			return true
		}
	}
	return false
}

// finished reports whether a chunk of a stream gave its end: a finish
// reason, or a prompt blocked before any candidate.
func finished(chunks []*genai.GenerateContentResponse) bool {
	for _, c := range chunks {
		if c == nil {
			continue
		}
		if len(c.Candidates) > 0 && c.Candidates[0] != nil && c.Candidates[0].FinishReason != "" {
			return true
		}
		if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
			return true
		}
	}
	return false
}

// attemptError sorts what the SDK returned from an attempt: a body that
// came with a success status but could not be read as an answer (cut JSON,
// a malformed event of a stream, an error event in the middle of one) is
// malformed; anything else (an error status, a timeout, a lost connection,
// a body too large) goes to classify as it is, with the error that cut
// the body when one did.
func (b *geminiBackend) attemptError(actx context.Context, slot *attemptSlot, err error) error {
	hres := *slot.hres
	if slot.readErr != nil && hres != nil && hres.StatusCode < 300 {
		err = slot.readErr
	}
	var tooLarge *tooLargeError
	var ne net.Error
	switch {
	case hres == nil || hres.StatusCode >= 300, actx.Err() != nil,
		errors.As(err, &tooLarge), errors.As(err, &ne), errors.Is(err, io.ErrUnexpectedEOF):
		return err
	}
	var ae genai.APIError
	if errors.As(err, &ae) {
		return b.malformed(hres, fmt.Errorf("the stream ended with an error: %s %s", ae.Status, ae.Message))
	}
	return b.malformed(hres, err)
}

// malformed is malformed(...) for the gemini kind: the SDK's message is
// cut to its first line (it may quote the whole body) and scrubbed.
func (b *geminiBackend) malformed(hres *http.Response, err error) *Error {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return malformed("chat completion", hres, errors.New(b.scrub(truncate(msg, 300))))
}

// listModels lists the models of every page of GET /v1beta/models, their
// names without the "models/" prefix (as requests name them).
func (b *geminiBackend) listModels(ctx context.Context, hres **http.Response) ([]string, error) {
	ctx, _ = withSlot(ctx, hres)
	page, err := b.models.List(ctx, nil)
	var names []string
	for err == nil {
		for _, m := range page.Items {
			if m != nil {
				names = append(names, strings.TrimPrefix(m.Name, "models/"))
			}
		}
		page, err = page.Next(ctx)
	}
	if !errors.Is(err, genai.ErrPageDone) {
		return nil, err
	}
	return names, nil
}

// geminiRequest translates a harness request into the SDK's contents and
// configuration.
func geminiRequest(model string, req *harness.ChatRequest) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	var ve harness.ValidationError
	if model == "" {
		ve.Add("model", "is required")
	} else if strings.ContainsAny(model, "?&") || strings.Contains(model, "..") {
		ve.Add("model", "%q is not a Gemini model name", model)
	}
	if len(req.Messages) == 0 {
		ve.Add("messages", "at least one message is required")
	}
	cfg := &genai.GenerateContentConfig{AutomaticContinuation: genai.Ptr(false)}
	var system []*genai.Part
	var contents []*genai.Content
	// calls are the tool calls of the conversation by id: a tool message
	// names only the id of the call it answers, and Gemini wants the
	// function's name.
	calls := map[string]harness.ToolCall{}
	for i, m := range req.Messages {
		switch m.Role {
		case harness.RoleSystem, "developer":
			system = append(system, &genai.Part{Text: m.Content})
		case harness.RoleUser:
			contents = append(contents, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: m.Content}}})
		case harness.RoleAssistant:
			if c := modelTurn(i, m, calls, &ve); len(c.Parts) > 0 {
				// An empty answer (a blocked one) has nothing Gemini
				// would take back: a part needs some data.
				contents = append(contents, c)
			}
		case harness.RoleTool:
			if m.ToolCallID == "" {
				ve.Add(fmt.Sprintf("messages[%d].tool_call_id", i), "a tool message needs the id of the call it answers")
			}
			fr := &genai.FunctionResponse{Name: m.ToolCallID, Response: map[string]any{"output": m.Content}}
			if tc, ok := calls[m.ToolCallID]; ok {
				fr.Name = tc.Name
				if !strings.HasPrefix(tc.ID, geminiCallPrefix) {
					fr.ID = tc.ID
				}
			}
			part := &genai.Part{FunctionResponse: fr}
			// The answers to the calls of one turn go together in one
			// user turn.
			if k := len(contents) - 1; k >= 0 && contents[k].Role == genai.RoleUser && onlyResponses(contents[k]) {
				contents[k].Parts = append(contents[k].Parts, part)
			} else {
				contents = append(contents, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{part}})
			}
		default:
			ve.Add(fmt.Sprintf("messages[%d].role", i), "unknown role %q", m.Role)
		}
	}
	if len(system) > 0 {
		cfg.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: system}
	}
	var decls []*genai.FunctionDeclaration
	for i, f := range req.Tools {
		if f.Name == "" {
			ve.Add(fmt.Sprintf("tools[%d].name", i), "is required")
		}
		d := &genai.FunctionDeclaration{Name: f.Name, Description: f.Description}
		if f.Parameters != nil {
			// The JSON Schema as it is: Gemini's own Schema type knows only
			// a subset of it.
			d.ParametersJsonSchema = f.Parameters
		}
		decls = append(decls, d)
	}
	if len(decls) > 0 {
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	if t := req.Temperature; t != nil {
		cfg.Temperature = genai.Ptr(float32(*t))
	}
	if p := req.TopP; p != nil {
		cfg.TopP = genai.Ptr(float32(*p))
	}
	if s := req.Seed; s != nil {
		if *s < math.MinInt32 || *s > math.MaxInt32 {
			ve.Add("seed", "must fit in 32 bits for Gemini")
		}
		cfg.Seed = genai.Ptr(int32(*s))
	}
	if req.MaxTokens > 0 {
		cfg.MaxOutputTokens = int32(min(req.MaxTokens, math.MaxInt32))
	}
	if r := req.Reasoning; r != nil {
		cfg.ThinkingConfig = &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: genai.Ptr(int32(min(r.Budget(), math.MaxInt32)))}
	}
	return contents, cfg, ve.Err()
}

// modelTurn translates an assistant message (index i) into a model turn:
// its thoughts with their signatures (Gemini wants them back, with the
// function calls above all), its text and its function calls. It records
// the calls by id.
func modelTurn(i int, m harness.Message, calls map[string]harness.ToolCall, ve *harness.ValidationError) *genai.Content {
	c := &genai.Content{Role: genai.RoleModel}
	// Signatures that came on the text or a function call rather than on
	// a thought go back on the function calls, in order, else on the text.
	var loose [][]byte
	for _, p := range m.Parts {
		if p.Kind != harness.PartReasoning {
			continue
		}
		var sig []byte
		if p.Signature != "" {
			var err error
			if sig, err = base64.StdEncoding.DecodeString(p.Signature); err != nil {
				sig = nil // another provider's token, Gemini's would decode
			}
		}
		if p.Text == "" {
			if sig != nil {
				loose = append(loose, sig)
			}
			continue
		}
		c.Parts = append(c.Parts, &genai.Part{Text: p.Text, Thought: true, ThoughtSignature: sig})
	}
	var text *genai.Part
	if m.Content != "" || (len(m.ToolCalls) == 0 && len(loose) > 0) {
		text = &genai.Part{Text: m.Content}
		c.Parts = append(c.Parts, text)
	}
	for j, tc := range m.ToolCalls {
		args := map[string]any{}
		if strings.TrimSpace(tc.Arguments) != "" {
			if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
				ve.Add(fmt.Sprintf("messages[%d].tool_calls[%d].arguments", i, j), "is not a JSON object: %v", err)
			}
		}
		fc := &genai.FunctionCall{Name: tc.Name, Args: args}
		if !strings.HasPrefix(tc.ID, geminiCallPrefix) {
			fc.ID = tc.ID
		}
		part := &genai.Part{FunctionCall: fc}
		if len(loose) > 0 {
			part.ThoughtSignature, loose = loose[0], loose[1:]
		}
		c.Parts = append(c.Parts, part)
		if tc.ID != "" {
			calls[tc.ID] = tc
		}
	}
	if len(loose) > 0 && text != nil {
		text.ThoughtSignature = loose[0]
	}
	return c
}

// onlyResponses reports whether a content holds function responses only.
func onlyResponses(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p.FunctionResponse == nil {
			return false
		}
	}
	return len(c.Parts) > 0
}

// geminiResponse translates an answer, whole or as the chunks of a stream,
// into a harness answer: the first candidate's text (thoughts apart), its
// function calls (given ids when Gemini sent none: "gemini-call-T-N" for
// the N-th call of turn T), its thoughts as reasoning parts with their
// signatures, the finish reason and the usage. An answer with neither a
// candidate nor a blocked prompt is malformed.
func geminiResponse(chunks []*genai.GenerateContentResponse, model string, turn int) (*harness.ChatResponse, error) {
	resp := &harness.ChatResponse{Model: model, Message: harness.Message{Role: harness.RoleAssistant}}
	var usage *genai.GenerateContentResponseUsageMetadata
	var finish genai.FinishReason
	var block genai.BlockedReason
	candidates := false
	var text strings.Builder
	msg := &resp.Message
	// afterThought is set while the last part read was a thought.
	afterThought := false
	for _, gr := range chunks {
		if gr == nil {
			continue
		}
		if gr.ModelVersion != "" {
			resp.Model = gr.ModelVersion
		}
		if gr.UsageMetadata != nil {
			usage = gr.UsageMetadata
		}
		if gr.PromptFeedback != nil && gr.PromptFeedback.BlockReason != "" {
			block = gr.PromptFeedback.BlockReason
		}
		if len(gr.Candidates) == 0 || gr.Candidates[0] == nil {
			continue
		}
		candidates = true
		cand := gr.Candidates[0]
		if cand.FinishReason != "" {
			finish = cand.FinishReason
		}
		if cand.Content == nil {
			continue
		}
		for _, p := range cand.Content.Parts {
			if p == nil {
				continue
			}
			joins := afterThought
			afterThought = false
			sig := ""
			if len(p.ThoughtSignature) > 0 {
				sig = base64.StdEncoding.EncodeToString(p.ThoughtSignature)
			}
			switch {
			case p.Thought:
				// A stream cuts a thought into chunks: they join, up to the
				// one that carries the signature.
				if k := len(msg.Parts) - 1; joins && msg.Parts[k].Signature == "" {
					msg.Parts[k].Text += p.Text
					msg.Parts[k].Signature = sig
				} else {
					msg.Parts = append(msg.Parts, harness.Part{Kind: harness.PartReasoning, Text: p.Text, Signature: sig})
				}
				afterThought = true
				continue
			case p.FunctionCall != nil:
				fc := p.FunctionCall
				args := []byte("{}")
				if len(fc.Args) > 0 {
					var err error
					if args, err = json.Marshal(fc.Args); err != nil {
						return nil, fmt.Errorf("function call %s: %w", fc.Name, err)
					}
				}
				id := fc.ID
				if id == "" {
					id = fmt.Sprintf("%s%d-%d", geminiCallPrefix, turn, len(msg.ToolCalls)+1)
				}
				msg.ToolCalls = append(msg.ToolCalls, harness.ToolCall{ID: id, Name: fc.Name, Arguments: string(args)})
			default:
				text.WriteString(p.Text)
			}
			if sig != "" {
				// A signature on the text or a call: kept as a reasoning
				// part without text, sent back the same way.
				msg.Parts = append(msg.Parts, harness.Part{Kind: harness.PartReasoning, Signature: sig})
			}
		}
	}
	if !candidates && block == "" {
		return nil, errors.New("no candidates in the answer")
	}
	msg.Content = text.String()
	switch {
	case block != "" && !candidates:
		resp.FinishReason = "blocked: " + strings.ToLower(string(block))
	case finish == genai.FinishReasonStop && len(msg.ToolCalls) > 0:
		resp.FinishReason = "tool_calls"
	case finish == genai.FinishReasonStop:
		resp.FinishReason = "stop"
	case finish == genai.FinishReasonMaxTokens:
		resp.FinishReason = "length"
	default:
		resp.FinishReason = strings.ToLower(string(finish))
	}
	if u := usage; u != nil {
		resp.Usage = harness.Usage{
			PromptTokens:     int(u.PromptTokenCount),
			CachedTokens:     int(u.CachedContentTokenCount),
			CompletionTokens: int(u.CandidatesTokenCount) + int(u.ThoughtsTokenCount),
			ReasoningTokens:  int(u.ThoughtsTokenCount),
			TotalTokens:      int(u.TotalTokenCount),
		}
		if resp.Usage.TotalTokens == 0 {
			resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
		}
	}
	return resp, nil
}
