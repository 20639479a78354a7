package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

//lint:file-ignore ST1005 the decode errors are the messages of 400 answers, worded as Gemini words them

// Google's Gemini API (generateContent), the parts the fake reads and
// writes: POST /v1beta/models/{model}:generateContent, the same with
// :streamGenerateContent?alt=sse for a stream of server-sent events, and
// GET /v1beta/models.

// geminiModelsPath lists the models.
const geminiModelsPath = "/v1beta/models"

// GeminiThought is the text of the thought the fake sends before its
// answer when a Gemini request asks for thoughts (thinkingConfig with
// includeThoughts).
const GeminiThought = "I read the question, work out the answer, then give it."

// geminiWire is the generateContent API of one model, streamed or not.
type geminiWire struct {
	model  string
	stream bool
}

// geminiWireFor returns the format of a generateContent path, false when
// path is none.
func geminiWireFor(path string) (geminiWire, bool) {
	rest, ok := strings.CutPrefix(path, geminiModelsPath+"/")
	if !ok {
		return geminiWire{}, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return geminiWire{}, false
	}
	switch rest[i+1:] {
	case "generateContent":
		return geminiWire{model: rest[:i]}, true
	case "streamGenerateContent":
		return geminiWire{model: rest[:i], stream: true}, true
	}
	return geminiWire{}, false
}

type geminiRequestBody struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string         `json:"name"`
			Description          string         `json:"description"`
			Parameters           map[string]any `json:"parameters"`
			ParametersJSONSchema map[string]any `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		Temperature     *float64 `json:"temperature"`
		TopP            *float64 `json:"topP"`
		MaxOutputTokens *int     `json:"maxOutputTokens"`
		Seed            *int64   `json:"seed"`
		ThinkingConfig  *struct {
			IncludeThoughts bool `json:"includeThoughts"`
			ThinkingBudget  *int `json:"thinkingBudget"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             *string                 `json:"text,omitempty"`
	Thought          bool                    `json:"thought,omitempty"`
	ThoughtSignature string                  `json:"thoughtSignature,omitempty"`
	FunctionCall     *geminiFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *geminiFunctionResponse `json:"functionResponse,omitempty"`
}

type geminiFunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type geminiFunctionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata *geminiUsage      `json:"usageMetadata,omitempty"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

type geminiCandidate struct {
	Content      geminiContent `json:"content"`
	FinishReason string        `json:"finishReason,omitempty"`
	Index        int           `json:"index"`
}

type geminiUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount,omitempty"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

// authorized accepts the key in x-goog-api-key or as ?key=, as Gemini does.
func (geminiWire) authorized(r *http.Request, key string) bool {
	return r.Header.Get("X-Goog-Api-Key") == key || r.URL.Query().Get("key") == key
}

// decode reads a generateContent request: the system instruction becomes
// a first system message, a model turn an assistant message (thoughts
// left out, function calls as tool calls whose id is the call's, else its
// name) and each function response a tool message answering that id (its
// output when the response is {"output": text}, else the response's
// JSON).
func (f geminiWire) decode(r *http.Request, body []byte) (*Request, bool, error) {
	var wr geminiRequestBody
	if err := json.Unmarshal(body, &wr); err != nil {
		return nil, false, fmt.Errorf("Invalid JSON payload received. %v", err)
	}
	if len(wr.Contents) == 0 {
		return nil, false, errors.New("* GenerateContentRequest.contents: contents is not specified")
	}
	gc := wr.GenerationConfig
	req := &Request{Model: f.model, Temperature: gc.Temperature, TopP: gc.TopP, Seed: gc.Seed, Body: body, Stream: f.stream}
	if gc.MaxOutputTokens != nil {
		req.MaxTokens = *gc.MaxOutputTokens
	}
	if tc := gc.ThinkingConfig; tc != nil && (tc.ThinkingBudget == nil || *tc.ThinkingBudget != 0) {
		req.Reasoning = &harness.ReasoningParams{}
		if tc.ThinkingBudget != nil && *tc.ThinkingBudget > 0 {
			req.Reasoning.BudgetTokens = *tc.ThinkingBudget
		}
	}
	if si := wr.SystemInstruction; si != nil {
		req.Messages = append(req.Messages, harness.Message{Role: harness.RoleSystem, Content: partsText(si.Parts)})
	}
	for i, c := range wr.Contents {
		switch c.Role {
		case "user", "":
			var text []geminiPart
			for j, p := range c.Parts {
				fr := p.FunctionResponse
				if fr == nil {
					text = append(text, p)
					continue
				}
				if fr.Name == "" {
					return nil, false, fmt.Errorf("* GenerateContentRequest.contents[%d].parts[%d].function_response.name: Name cannot be empty.", i, j)
				}
				id := fr.ID
				if id == "" {
					id = fr.Name
				}
				req.Messages = append(req.Messages, harness.Message{Role: harness.RoleTool, ToolCallID: id, Content: responseText(fr.Response)})
			}
			if len(text) > 0 {
				req.Messages = append(req.Messages, harness.Message{Role: harness.RoleUser, Content: partsText(text)})
			}
		case "model":
			m := harness.Message{Role: harness.RoleAssistant, Content: partsText(c.Parts)}
			for j, p := range c.Parts {
				fc := p.FunctionCall
				if fc == nil {
					continue
				}
				if fc.Name == "" {
					return nil, false, fmt.Errorf("* GenerateContentRequest.contents[%d].parts[%d].function_call.name: Name cannot be empty.", i, j)
				}
				id := fc.ID
				if id == "" {
					id = fc.Name
				}
				m.ToolCalls = append(m.ToolCalls, harness.ToolCall{ID: id, Name: fc.Name, Arguments: argsJSON(fc.Args)})
			}
			req.Messages = append(req.Messages, m)
		default:
			return nil, false, fmt.Errorf("Please use a valid role: user, model.")
		}
	}
	for i, t := range wr.Tools {
		for j, d := range t.FunctionDeclarations {
			if d.Name == "" {
				return nil, false, fmt.Errorf("* GenerateContentRequest.tools[%d].function_declarations[%d].name: Name cannot be empty.", i, j)
			}
			params := d.ParametersJSONSchema
			if params == nil {
				params = d.Parameters
			}
			req.Tools = append(req.Tools, harness.FunctionDef{Name: d.Name, Description: d.Description, Parameters: params})
		}
	}
	return req, f.stream, nil
}

// partsText joins the text of the parts that are not thoughts.
func partsText(parts []geminiPart) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Text != nil && !p.Thought {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// responseText is a function response as a tool message's text.
func responseText(resp map[string]any) string {
	if out, ok := resp["output"].(string); ok && len(resp) == 1 {
		return out
	}
	return argsJSON(resp)
}

// argsJSON is a JSON object's text, "{}" for none.
func argsJSON(m map[string]any) string {
	if len(m) == 0 {
		return "{}"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// geminiStatus is the status word of Google's errors for an HTTP status.
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusNotImplemented, http.StatusMethodNotAllowed:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// writeGeminiError writes Google's error body: {"error": {"code",
// "message", "status"}}.
func writeGeminiError(w http.ResponseWriter, status int, msg string) {
	type apiError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	}
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{apiError{Code: status, Message: msg, Status: geminiStatus(status)}})
}

// writeError answers an error in Google's shape.
func (geminiWire) writeError(w http.ResponseWriter, status int, msg string) {
	writeGeminiError(w, status, msg)
}

// writeRateLimit answers 429 RESOURCE_EXHAUSTED.
func (geminiWire) writeRateLimit(w http.ResponseWriter, msg string) {
	writeGeminiError(w, http.StatusTooManyRequests, msg)
}

// thoughtSignature is the fake's signature of the thought of a request,
// or of its first function call (call true): opaque bytes, base64 on the
// wire, the same for the same conversation.
func thoughtSignature(req *Request, call bool) string {
	what := "thought"
	if call {
		what = "call"
	}
	h := fnv.New64a()
	for _, m := range req.Messages {
		fmt.Fprintf(h, "%s\x00%s\x00", m.Role, m.Content)
	}
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "llmtest-%s-signature-%x", what, h.Sum64()))
}

// geminiAnswer builds the answer to a request: a thought with its
// signature when the request asks for thoughts, the text, the function
// calls (the first with a signature when thinking; an id only when the
// reply gives one, as Gemini sends none), the finish reason and the usage.
func (h *Handler) geminiAnswer(req *Request, rep *Reply) (geminiResponse, []geminiPart) {
	model := req.Model
	if model == "" {
		model = h.opts.Model
	}
	content := rep.Content
	finish := "STOP"
	if req.MaxTokens > 0 && CountTokens(content) > req.MaxTokens {
		content = string([]rune(content)[:req.MaxTokens*4])
		finish = "MAX_TOKENS"
	}
	var parts []geminiPart
	thoughts := 0
	if req.Reasoning != nil {
		thoughts = CountTokens(GeminiThought)
		if includeThoughts(req) {
			t := GeminiThought
			parts = append(parts, geminiPart{Text: &t, Thought: true, ThoughtSignature: thoughtSignature(req, false)})
		}
	}
	if content != "" || len(rep.ToolCalls) == 0 {
		parts = append(parts, geminiPart{Text: &content})
	}
	candidates := CountTokens(content)
	for i, tc := range rep.ToolCalls {
		args := map[string]any{}
		if tc.Arguments != "" {
			json.Unmarshal([]byte(tc.Arguments), &args)
		}
		p := geminiPart{FunctionCall: &geminiFunctionCall{ID: tc.ID, Name: tc.Name, Args: args}}
		if i == 0 && req.Reasoning != nil {
			p.ThoughtSignature = thoughtSignature(req, true)
		}
		parts = append(parts, p)
		candidates += CountTokens(tc.Name) + CountTokens(argsJSON(args))
	}
	switch rep.FinishReason {
	case "":
	case "stop", "tool_calls":
		finish = "STOP"
	case "length":
		finish = "MAX_TOKENS"
	default:
		finish = strings.ToUpper(rep.FinishReason)
	}
	u := geminiUsage{PromptTokenCount: promptTokens(req.Messages), CandidatesTokenCount: candidates, ThoughtsTokenCount: thoughts}
	u.TotalTokenCount = u.PromptTokenCount + u.CandidatesTokenCount + u.ThoughtsTokenCount
	if ru := rep.Usage; ru != nil {
		u = geminiUsage{PromptTokenCount: ru.PromptTokens, CachedContentTokenCount: ru.CachedTokens,
			CandidatesTokenCount: ru.CompletionTokens - ru.ReasoningTokens, ThoughtsTokenCount: ru.ReasoningTokens, TotalTokenCount: ru.TotalTokens}
	}
	return geminiResponse{
		Candidates:    []geminiCandidate{{Content: geminiContent{Role: "model"}, FinishReason: finish}},
		UsageMetadata: &u,
		ModelVersion:  model,
		ResponseID:    fmt.Sprintf("llmtest-%d", req.N),
	}, parts
}

// includeThoughts reports whether a request asks to see the thoughts.
func includeThoughts(req *Request) bool {
	var wr geminiRequestBody
	json.Unmarshal(req.Body, &wr)
	tc := wr.GenerationConfig.ThinkingConfig
	return tc != nil && tc.IncludeThoughts
}

// writeAnswer answers whole, or as server-sent events: the thought in two
// chunks (the signature on the second), the text in chunks of a few words,
// the function calls, and the finish reason and full usage on the last
// chunk (the earlier ones count only the prompt, as Gemini's do).
func (f geminiWire) writeAnswer(h *Handler, w http.ResponseWriter, req *Request, rep *Reply, stream bool) {
	resp, parts := h.geminiAnswer(req, rep)
	if !stream {
		resp.Candidates[0].Content.Parts = parts
		writeJSON(w, http.StatusOK, resp)
		return
	}
	var chunks [][]geminiPart
	for _, p := range parts {
		switch {
		case p.Thought:
			t := *p.Text
			a, b := t[:len(t)/2], t[len(t)/2:]
			chunks = append(chunks, []geminiPart{{Text: &a, Thought: true}}, []geminiPart{{Text: &b, Thought: true, ThoughtSignature: p.ThoughtSignature}})
		case p.FunctionCall != nil:
			if k := len(chunks) - 1; k >= 0 && chunks[k][0].FunctionCall != nil {
				chunks[k] = append(chunks[k], p)
			} else {
				chunks = append(chunks, []geminiPart{p})
			}
		default:
			for _, piece := range splitWords(*p.Text, 3) {
				chunks = append(chunks, []geminiPart{{Text: &piece}})
			}
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, c := range chunks {
		chunk := resp
		chunk.Candidates = []geminiCandidate{{Content: geminiContent{Role: "model", Parts: c}}}
		if i == len(chunks)-1 {
			chunk.Candidates[0].FinishReason = resp.Candidates[0].FinishReason
		} else {
			chunk.UsageMetadata = &geminiUsage{PromptTokenCount: resp.UsageMetadata.PromptTokenCount, TotalTokenCount: resp.UsageMetadata.PromptTokenCount}
		}
		b, _ := json.Marshal(chunk)
		if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", b); err != nil {
			return
		}
		rc.Flush()
		if rep.cut {
			cutConnection(w)
			return
		}
	}
}

// splitWords cuts s into at most n pieces at spaces (one piece, possibly
// empty, when it has no space); the pieces join back into s.
func splitWords(s string, n int) []string {
	words := strings.SplitAfter(s, " ")
	if len(words) <= 1 {
		return []string{s}
	}
	per := (len(words) + n - 1) / n
	var out []string
	for i := 0; i < len(words); i += per {
		out = append(out, strings.Join(words[i:min(i+per, len(words))], ""))
	}
	return out
}

// writeGarbage answers 200 with a body cut in the middle of its JSON; a
// stream gets one good event, then one cut short.
func (f geminiWire) writeGarbage(w http.ResponseWriter, req *Request) {
	n := req.N
	const cut = `{"candidates":[{"content":{"role":"model","parts":[{"text":"The ans`
	if !f.stream {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, cut)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"The \"}]},\"index\":0}],\"responseId\":\"llmtest-%d\"}\r\n\r\n", n)
	fmt.Fprint(w, "data: "+cut)
}

// writeHuge answers with a valid answer whose text is Options.HugeBytes
// long (one event of a stream), written in chunks as it goes, until it is
// done, the client hangs up or the handler is closed.
func (f geminiWire) writeHuge(h *Handler, w http.ResponseWriter, r *http.Request, req *Request) {
	model, _ := json.Marshal(f.model)
	size := h.opts.HugeBytes
	tokens := (size + 3) / 4
	prompt := int64(promptTokens(req.Messages))
	head := `{"candidates":[{"content":{"role":"model","parts":[{"text":"`
	tail := fmt.Sprintf(`"}]},"finishReason":"MAX_TOKENS","index":0}],"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"totalTokenCount":%d},"modelVersion":%s}`,
		prompt, tokens, prompt+tokens, model)
	if f.stream {
		w.Header().Set("Content-Type", "text/event-stream")
		head, tail = "data: "+head, tail+"\r\n\r\n"
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		n, err := w.Write(b)
		h.hugeSent.Add(int64(n))
		return err == nil
	}
	if !write([]byte(head)) {
		return
	}
	if !h.writeFiller(r, size, func(c string) bool { return write([]byte(c)) }) {
		return
	}
	write([]byte(tail))
}

// serveGeminiModels answers GET /v1beta/models in Gemini's shape.
func (h *Handler) serveGeminiModels(w http.ResponseWriter, r *http.Request) {
	if h.opts.APIKey != "" && !(geminiWire{}).authorized(r, h.opts.APIKey) {
		writeGeminiError(w, http.StatusUnauthorized, "API key not valid. Please pass a valid API key.")
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeGeminiError(w, http.StatusMethodNotAllowed, "Use GET for "+geminiModelsPath+".")
		return
	}
	type model struct {
		Name                       string   `json:"name"`
		DisplayName                string   `json:"displayName"`
		SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
	}
	var list struct {
		Models []model `json:"models"`
	}
	for _, m := range h.models() {
		list.Models = append(list.Models, model{Name: "models/" + m, DisplayName: m,
			SupportedGenerationMethods: []string{"generateContent", "streamGenerateContent"}})
	}
	writeJSON(w, http.StatusOK, list)
}
