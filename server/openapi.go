package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// documentErrors lists in the OpenAPI document, for each operation, the
// error statuses it can answer, each with the problem+json body; huma
// documents only a "default" error. The rules follow errors.go and the
// handlers: a body can be malformed (400), too large (413) or invalid
// (422); a path id can be unknown (404); a create can collide and a
// definitions write can meet a hand-edited file (409).
func documentErrors(api huma.API, withAuth bool) {
	oa := api.OpenAPI()
	for path, item := range oa.Paths {
		for method, op := range map[string]*huma.Operation{
			http.MethodGet: item.Get, http.MethodPost: item.Post, http.MethodPut: item.Put, http.MethodDelete: item.Delete,
		} {
			if op == nil {
				continue
			}
			for _, code := range errorStatuses(path, method, op, withAuth) {
				addErrorResponse(op, code)
			}
		}
	}
}

func errorStatuses(path, method string, op *huma.Operation, withAuth bool) []int {
	var codes []int
	add := func(c ...int) { codes = append(codes, c...) }
	if op.RequestBody != nil {
		add(http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity)
	}
	for _, p := range op.Parameters {
		switch {
		case p.In == "path":
			add(http.StatusNotFound)
			if p.Schema != nil && p.Schema.Type == huma.TypeInteger {
				add(http.StatusUnprocessableEntity)
			}
		case p.In == "query":
			add(http.StatusUnprocessableEntity)
		}
	}
	webhook := isWebhook(path)
	if webhook || (withAuth && strings.HasPrefix(path, "/api/")) {
		add(http.StatusUnauthorized)
	}
	_, creates := op.Responses["201"]
	switch {
	case creates,
		strings.HasPrefix(path, "/api/settings/") && method != http.MethodGet,
		path == "/api/start", webhook,
		method == http.MethodDelete && strings.HasPrefix(path, "/api/history/"):
		add(http.StatusConflict)
	}
	if strings.Contains(path, "/kb") && (method == http.MethodPost || method == http.MethodPut) {
		add(http.StatusUnsupportedMediaType)
	}
	if strings.HasSuffix(path, "/chat") || webhook {
		add(http.StatusBadGateway)
	}
	add(http.StatusInternalServerError)
	slices.Sort(codes)
	return slices.Compact(codes)
}

func addErrorResponse(op *huma.Operation, code int) {
	key := strconv.Itoa(code)
	if op.Responses == nil {
		op.Responses = map[string]*huma.Response{}
	}
	problem := map[string]*huma.MediaType{
		"application/problem+json": {Schema: &huma.Schema{Ref: "#/components/schemas/ApiError"}},
	}
	switch r, ok := op.Responses[key]; {
	case !ok:
		op.Responses[key] = &huma.Response{Description: http.StatusText(code), Content: problem}
	case r.Content == nil:
		// Declared by hand with its own description: give it the body.
		r.Content = problem
	}
}
