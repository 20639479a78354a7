package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// targetStore is what the target operations need of the catalog.
type targetStore interface {
	Targets(ctx context.Context) ([]harness.TargetDefinition, error)
	Target(ctx context.Context, id string) (harness.TargetDefinition, error)
}

var _ targetStore = (*catalog.Catalog)(nil)

type targetHandler struct {
	problems
	store targetStore
}

// apiTargetResponse is where a target's reply holds its parts.
type apiTargetResponse struct {
	Answer    string `json:"answer" doc:"JSON pointer (RFC 6901) to the answer's text."`
	ToolCalls string `json:"tool_calls,omitempty" doc:"JSON pointer to the array of tool calls the target made."`
	Sources   string `json:"sources,omitempty" doc:"JSON pointer to the array of sources the answer used."`
}

// apiTargetSignature is how a target's requests are signed.
type apiTargetSignature struct {
	Header string `json:"header" doc:"The header that carries sha256=<hex HMAC-SHA256 of the body>."`
	Secret string `json:"secret" doc:"The environment variable holding the key, as ${VAR}: never its value."`
}

// apiTarget is a black-box target as the API returns it: as its file
// holds it, the ${VAR} references unresolved.
type apiTarget struct {
	ID          string              `json:"id"`
	Description string              `json:"description"`
	URL         string              `json:"url" doc:"http or https; may name environment variables as ${VAR}."`
	Method      string              `json:"method" doc:"POST, PUT or PATCH."`
	Headers     map[string]string   `json:"headers" doc:"Sent with every request; values name environment variables as ${VAR}, never their values."`
	Body        any                 `json:"body" doc:"The request body: any JSON value, with {{prompt}}, {{messages}} and {{conversation_id}} placeholders."`
	Response    apiTargetResponse   `json:"response"`
	Signature   *apiTargetSignature `json:"signature,omitempty"`
}

func toAPITarget(t harness.TargetDefinition) apiTarget {
	out := apiTarget{ID: t.ID, Description: t.Description, URL: t.URL, Method: t.Method, Headers: t.Headers, Body: t.Body,
		Response: apiTargetResponse(t.Response)}
	if out.Headers == nil {
		out.Headers = map[string]string{}
	}
	if t.Signature != nil {
		s := apiTargetSignature(*t.Signature)
		out.Signature = &s
	}
	return out
}

func toAPITargets(ts []harness.TargetDefinition) []apiTarget {
	out := make([]apiTarget, len(ts))
	for i, t := range ts {
		out[i] = toAPITarget(t)
	}
	return out
}

// apiTargetImport is a target of an import: the export's shape; response
// may also be a single pointer (the answer's), as in a file.
type apiTargetImport struct {
	ID          string                   `json:"id,omitempty" api:"required"`
	Description string                   `json:"description,omitempty"`
	URL         string                   `json:"url,omitempty" api:"required"`
	Method      string                   `json:"method,omitempty" doc:"Default POST."`
	Headers     map[string]string        `json:"headers,omitempty"`
	Body        any                      `json:"body,omitempty" api:"required"`
	Response    any                      `json:"response,omitempty" api:"required" doc:"A JSON pointer to the answer, or {answer, tool_calls, sources} pointers."`
	Signature   *apiTargetSignatureInput `json:"signature,omitempty"`
}

// apiTargetSignatureInput is a target's signature in an import.
type apiTargetSignatureInput struct {
	Header string `json:"header,omitempty" api:"required" doc:"The header that carries sha256=<hex HMAC-SHA256 of the body>."`
	Secret string `json:"secret,omitempty" api:"required" doc:"The environment variable holding the key, as ${VAR}: a value is refused."`
}

// target returns the definition; a response that is neither form is an
// error naming the field.
func (b *apiTargetImport) target() (harness.TargetDefinition, error) {
	t := harness.TargetDefinition{ID: b.ID, Description: b.Description, URL: b.URL, Method: b.Method, Headers: b.Headers, Body: b.Body}
	if b.Signature != nil {
		s := harness.TargetSignature(*b.Signature)
		t.Signature = &s
	}
	r, err := harness.ParseTargetResponse(b.Response)
	if err != nil {
		ve := &harness.ValidationError{}
		ve.Merge("response", err)
		return t, ve
	}
	t.Response = r
	return t, nil
}

// apiTargetList is the answer of list-targets.
type apiTargetList struct {
	Targets []apiTarget `json:"targets" doc:"Ordered by id."`
	Total   int         `json:"total" doc:"The number of targets, without paging."`
}

type getTargetInput struct {
	TargetID string `path:"target_id" doc:"Target id."`
	IfNoneMatchHeader
}

type targetOutput struct {
	ETag string `header:"ETag" doc:"The target's entity tag, for If-None-Match."`
	Body apiTarget
}

type listTargetsOutput struct {
	Body apiTargetList
}

// registerTargets registers the target operations. Targets are read
// here; they are written as files (targets/<id>.yaml, then a sync) or by
// an import.
func registerTargets(api huma.API, store targetStore, log *slog.Logger) {
	h := &targetHandler{problems{log}, store}
	tags := []string{tagTargets}
	register(api, huma.Operation{
		OperationID: "list-targets", Method: http.MethodGet, Path: "/api/settings/targets",
		Summary: "List black-box targets", Tags: tags,
		Description: "Every target of targets/*.yaml, ordered by id, with its ${VAR} references as written: " +
			"the values of the variables are never shown." + pagingDoc,
	}, h.list)
	register(api, huma.Operation{
		OperationID: "get-target", Method: http.MethodGet, Path: "/api/settings/targets/{target_id}",
		Summary: "Get a black-box target", Tags: tags, Description: "404 for an unknown id." + etagReadDoc,
		Errors: []int{http.StatusNotFound},
	}, h.get)
	documentNotModified(api, "/api/settings/targets/{target_id}")
}

func (h *targetHandler) list(ctx context.Context, in *PageParams) (*listTargetsOutput, error) {
	all, err := h.store.Targets(ctx)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	ts, total := page(all, *in)
	return &listTargetsOutput{Body: apiTargetList{Targets: toAPITargets(ts), Total: total}}, nil
}

func (h *targetHandler) get(ctx context.Context, in *getTargetInput) (*targetOutput, error) {
	t, err := h.store.Target(ctx, in.TargetID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	b := toAPITarget(t)
	out := &targetOutput{ETag: etagOf(b), Body: b}
	return out, in.IfNoneMatchHeader.check(out.ETag)
}

// importTargets returns the targets of an import: nil when the body has
// no targets key (the current ones stay); a response in neither form is
// added to ve.
func importTargets(ve *harness.ValidationError, in []apiTargetImport) []harness.TargetDefinition {
	if in == nil {
		return nil
	}
	out := make([]harness.TargetDefinition, len(in))
	for i := range in {
		t, err := in[i].target()
		if err != nil {
			ve.Merge("targets["+strconv.Itoa(i)+"]", err)
		}
		out[i] = t
	}
	return out
}

func init() {
	// The schema descriptions of this file's types (see schemaDocs).
	for name, doc := range map[string]string{
		"Target":               "A black-box target: an HTTP endpoint a run sends each user turn to, as its file holds it (${VAR} references unresolved).",
		"TargetList":           "Every black-box target, ordered by id.",
		"TargetResponse":       "Where a target's JSON reply holds the answer, the tool calls and the sources (JSON pointers).",
		"TargetSignature":      "How a target's request bodies are signed: HMAC-SHA256 in a header, with a key from an environment variable.",
		"TargetImport":         "A black-box target of an import.",
		"TargetSignatureInput": "How a target's request bodies are signed, in an import.",
	} {
		schemaDocs[name] = doc
	}
}

// toAPIRunTarget is the target a run evaluated, nil for none.
func toAPIRunTarget(t *harness.TargetDefinition) *apiTarget {
	if t == nil {
		return nil
	}
	out := toAPITarget(*t)
	return &out
}
