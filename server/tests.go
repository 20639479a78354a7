package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

type testHandler struct{ s *Server }

// expectedFields are the writable fields of an expected answer.
type expectedFields struct {
	Answer    *string                  `json:"answer,omitempty" doc:"The expected answer."`
	Type      *string                  `json:"type,omitempty" doc:"Comparison: exact (default), numeric, integer, choice, contains, regex, boolean, json, tool_call, or an evaluator's own type."`
	Tolerance optional[float64]        `json:"tolerance,omitempty" doc:"Relative tolerance of numeric comparisons (default 1e-6). null on update: back to the default."`
	Arguments optional[map[string]any] `json:"arguments,omitempty" doc:"For tool_call: arguments the call must include. null on update: none."`
}

func (f *expectedFields) apply(e *harness.Expected) {
	set(&e.Answer, f.Answer)
	set(&e.Type, f.Type)
	if f.Tolerance.Set {
		e.Tolerance = f.Tolerance.Value
	}
	f.Arguments.apply(&e.Arguments)
}

// testFields are the writable fields of a test; absent fields are nil.
type testFields struct {
	ID          *string         `json:"id,omitempty" doc:"Identifier; generated when absent on creation."`
	DomainID    *string         `json:"domain_id,omitempty" doc:"Owning domain. Required on creation."`
	Level       *int            `json:"level,omitempty" doc:"Level number. Required on creation."`
	Name        *string         `json:"name,omitempty"`
	Prompt      *string         `json:"prompt,omitempty" doc:"Text sent to the model. Required on creation."`
	Expected    *expectedFields `json:"expected,omitempty" doc:"Expected answer; on update, the fields present replace the stored ones."`
	EvaluatorID *string         `json:"evaluator_id,omitempty" doc:"Evaluator override; empty means the domain's."`
	Tools       []string        `json:"tools,omitempty" doc:"Tool ids offered to the model for this test."`
}

func (f *testFields) apply(t *harness.Test) {
	set(&t.ID, f.ID)
	set(&t.DomainID, f.DomainID)
	set(&t.Level, f.Level)
	set(&t.Name, f.Name)
	set(&t.Prompt, f.Prompt)
	if f.Expected != nil {
		f.Expected.apply(&t.Expected)
	}
	set(&t.EvaluatorID, f.EvaluatorID)
	if f.Tools != nil {
		t.Tools = f.Tools
	}
}

type testPath struct {
	TestID string `path:"test_id" doc:"Test id."`
}

type testOutput struct {
	Body harness.Test
}

// listTestsQuery filters tests. huma query parameters cannot be pointers,
// so an absent level is -1.
type listTestsQuery struct {
	Domain string `query:"domain" doc:"Only tests of this domain."`
	Level  int    `query:"level" default:"-1" minimum:"-1" doc:"Only tests of this level (-1 or absent: all levels)."`
}

type listTestsOutput struct {
	Body struct {
		Tests []harness.Test `json:"tests"`
	}
}

type createTestInput struct {
	Body testFields
}

type updateTestInput struct {
	TestID string `path:"test_id" doc:"Test id."`
	Body   testFields
}

type moveTestInput struct {
	TestID string `path:"test_id" doc:"Test id."`
	Body   struct {
		DomainID *string `json:"domain_id,omitempty" doc:"Target domain. Required."`
		Level    *int    `json:"level,omitempty" doc:"Target level. Required."`
	}
}

func (h *testHandler) register(api huma.API) {
	tags := []string{"Tests"}
	huma.Register(api, huma.Operation{
		OperationID: "list-tests", Method: http.MethodGet, Path: "/api/settings/tests",
		Summary: "List tests", Tags: tags,
		Description: "Ordered by domain, level and position in the level. `domain` and `level` filter, alone or together.",
	}, h.list)
	huma.Register(api, huma.Operation{
		OperationID: "get-test", Method: http.MethodGet, Path: "/api/settings/tests/{test_id}",
		Summary: "Get a test", Tags: tags,
	}, h.get)
	huma.Register(api, huma.Operation{
		OperationID: "create-test", Method: http.MethodPost, Path: "/api/settings/tests",
		Summary: "Create a test", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "The test goes at the end of its level. Without an id, one is generated.",
	}, h.create)
	huma.Register(api, huma.Operation{
		OperationID: "update-test", Method: http.MethodPut, Path: "/api/settings/tests/{test_id}",
		Summary: "Update a test", Tags: tags,
		Description: "Changes the fields present in the body and keeps the others. A new domain_id or level moves the test.",
	}, h.update)
	huma.Register(api, huma.Operation{
		OperationID: "delete-test", Method: http.MethodDelete, Path: "/api/settings/tests/{test_id}",
		Summary: "Delete a test", Tags: tags,
	}, h.delete)
	huma.Register(api, huma.Operation{
		OperationID: "move-test", Method: http.MethodPost, Path: "/api/settings/tests/{test_id}/move",
		Summary: "Move a test to another domain or level", Tags: tags,
		Description: "The test goes at the end of the target level. A target domain that does not exist is a 422.",
	}, h.move)
}

func (h *testHandler) list(ctx context.Context, in *listTestsQuery) (*listTestsOutput, error) {
	f := catalog.TestFilter{DomainID: in.Domain}
	if in.Level >= 0 {
		f.Level = &in.Level
	}
	ts, err := h.s.opts.Catalog.Tests(ctx, f)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &listTestsOutput{}
	out.Body.Tests = ts
	return out, nil
}

func (h *testHandler) get(ctx context.Context, in *testPath) (*testOutput, error) {
	t, err := h.s.opts.Catalog.Test(ctx, in.TestID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &testOutput{Body: t}, nil
}

func (h *testHandler) create(ctx context.Context, in *createTestInput) (*testOutput, error) {
	ve := &harness.ValidationError{}
	if in.Body.Level == nil {
		ve.Add("level", "is required")
	}
	if in.Body.DomainID == nil {
		ve.Add("domain_id", "is required")
	}
	if err := ve.Err(); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	var t harness.Test
	in.Body.apply(&t)
	t, err := h.s.opts.Catalog.CreateTest(ctx, t)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &testOutput{Body: t}, nil
}

func (h *testHandler) update(ctx context.Context, in *updateTestInput) (*testOutput, error) {
	t, err := h.s.opts.Catalog.UpdateTest(ctx, in.TestID, func(t *harness.Test) error {
		in.Body.apply(t)
		return nil
	})
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &testOutput{Body: t}, nil
}

func (h *testHandler) delete(ctx context.Context, in *testPath) (*ok, error) {
	if err := h.s.opts.Catalog.DeleteTest(ctx, in.TestID); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return success(), nil
}

func (h *testHandler) move(ctx context.Context, in *moveTestInput) (*testOutput, error) {
	ve := &harness.ValidationError{}
	if in.Body.DomainID == nil || *in.Body.DomainID == "" {
		ve.Add("domain_id", "is required")
	}
	if in.Body.Level == nil {
		ve.Add("level", "is required")
	}
	if err := ve.Err(); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	t, err := h.s.opts.Catalog.MoveTest(ctx, in.TestID, *in.Body.DomainID, *in.Body.Level)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &testOutput{Body: t}, nil
}
