package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// testStore is what the test operations need of the catalog.
type testStore interface {
	Tests(ctx context.Context, f catalog.TestFilter) ([]harness.Test, error)
	Test(ctx context.Context, id string) (harness.Test, error)
	CreateTest(ctx context.Context, t harness.Test) (harness.Test, error)
	UpdateTest(ctx context.Context, id string, apply func(*harness.Test) error) (harness.Test, error)
	DeleteTestIf(ctx context.Context, id string, check func(harness.Test) error) error
}

var _ testStore = (*catalog.Catalog)(nil)

type testHandler struct {
	problems
	store testStore
}

// apiExpected is a test's expected answer as the API returns it.
type apiExpected struct {
	Answer    string         `json:"answer"`
	Type      string         `json:"type" doc:"Comparison: exact, numeric, integer, choice, contains, regex, boolean, json, tool_call, or a type an evaluator registers."`
	Tolerance *float64       `json:"tolerance,omitempty" doc:"Relative tolerance of numeric comparisons; absent means the default, 1e-6."`
	Arguments map[string]any `json:"arguments,omitempty" doc:"For tool_call: arguments the call must include."`
	Sources   []string       `json:"sources,omitempty" doc:"Knowledge-base file names the agent's retrieval should find for the prompt, in a run that targets an agent: results then carry details.retrieval (recall@k, hit). They do not change the score."`

	Trajectory *apiTrajectory `json:"trajectory,omitempty"`
}

func toAPIExpected(e harness.Expected) apiExpected {
	return apiExpected{Answer: e.Answer, Type: e.Type, Tolerance: e.Tolerance, Arguments: e.Arguments, Sources: e.Sources,
		Trajectory: toAPITrajectory(e.Trajectory)}
}

// apiTest is a test as the API returns it.
type apiTest struct {
	ID          string      `json:"id"`
	DomainID    string      `json:"domain_id"`
	Level       int         `json:"level"`
	Name        string      `json:"name"`
	Prompt      string      `json:"prompt" doc:"Text sent to the model; empty for a test with turns or a simulated user."`
	Expected    apiExpected `json:"expected"`
	EvaluatorID string      `json:"evaluator_id" doc:"Evaluator override; empty means the domain's."`
	Tools       []string    `json:"tools" doc:"Tool ids offered to the model for this test, besides the level's."`
	// A multi-turn test, or one with a simulated user, instead of a prompt.
	Turns         []apiTurn         `json:"turns,omitempty" doc:"A multi-turn test's user turns, instead of a prompt."`
	SimulatedUser *apiSimulatedUser `json:"simulated_user,omitempty"`
}

func toAPITest(t harness.Test) apiTest {
	return apiTest{
		ID: t.ID, DomainID: t.DomainID, Level: t.Level, Name: t.Name, Prompt: t.Prompt,
		Expected: toAPIExpected(t.Expected), EvaluatorID: t.EvaluatorID, Tools: nonNil(t.Tools),
		Turns: toAPITurns(t.Turns), SimulatedUser: toAPISimulatedUser(t.SimulatedUser),
	}
}

func toAPITests(ts []harness.Test) []apiTest {
	out := make([]apiTest, len(ts))
	for i, t := range ts {
		out[i] = toAPITest(t)
	}
	return out
}

// apiTestList is the answer of list-tests.
type apiTestList struct {
	Tests []apiTest `json:"tests" doc:"Ordered by domain, level and position in the level."`
	Total int       `json:"total" doc:"The number of tests the filters select, without paging."`
}

// apiExpectedInput is an expected answer in a request. On update, the
// fields present replace the stored ones, and null clears tolerance or
// arguments.
type apiExpectedInput struct {
	Answer    *string                  `json:"answer,omitempty" doc:"The expected answer. Every built-in type needs one."`
	Type      *string                  `json:"type,omitempty" doc:"Comparison: exact (the default), numeric, integer, choice, contains, regex, boolean, json, tool_call, or a type an evaluator registers."`
	Tolerance optional[float64]        `json:"tolerance,omitzero" doc:"Relative tolerance of numeric comparisons (default 1e-6). null clears it: back to the default."`
	Arguments optional[map[string]any] `json:"arguments,omitzero" doc:"For tool_call: arguments the call must include. null clears them."`
	Sources   optional[[]string]       `json:"sources,omitzero" doc:"Knowledge-base file names (at most 50, each once, plain names) the agent's retrieval should find, in a run that targets an agent. null clears them."`

	Trajectory optionalTrajectory `json:"trajectory,omitzero" doc:"The tool calls the model should make, for the trajectory evaluator; replaces the stored one whole. null clears it."`
}

func (f *apiExpectedInput) apply(e *harness.Expected) {
	set(&e.Answer, f.Answer)
	set(&e.Type, f.Type)
	if f.Tolerance.Set {
		e.Tolerance = f.Tolerance.Value
	}
	f.Arguments.apply(&e.Arguments)
	f.Sources.apply(&e.Sources)
	if f.Trajectory.Set {
		e.Trajectory = f.Trajectory.Value.trajectory()
	}
}

// apiTestCreate is the body of create-test, and a test of an import.
type apiTestCreate struct {
	ID          string            `json:"id,omitempty" doc:"Identifier; generated (t- and 12 hex digits) when absent."`
	DomainID    string            `json:"domain_id,omitempty" api:"required" doc:"Owning domain; it must exist."`
	Level       *int              `json:"level,omitempty" api:"required" doc:"0 to 1000."`
	Name        string            `json:"name,omitempty"`
	Prompt      string            `json:"prompt,omitempty" api:"required" doc:"Text sent to the model; not blank. Not given with turns or simulated_user."`
	Expected    *apiExpectedInput `json:"expected,omitempty"`
	EvaluatorID string            `json:"evaluator_id,omitempty" doc:"Evaluator override; empty or absent means the domain's."`
	Tools       []string          `json:"tools,omitempty" doc:"Tool ids offered to the model for this test."`
	// Instead of a prompt.
	Turns         []apiTurnInput         `json:"turns,omitempty" doc:"A multi-turn test: user turns sent one after another with the conversation so far, instead of a prompt."`
	SimulatedUser *apiSimulatedUserInput `json:"simulated_user,omitempty"`
}

func (b *apiTestCreate) test() harness.Test {
	t := harness.Test{
		ID: b.ID, DomainID: b.DomainID, Name: b.Name, Prompt: b.Prompt,
		EvaluatorID: b.EvaluatorID, Tools: b.Tools,
		Turns: harnessTurns(b.Turns), SimulatedUser: harnessSimulatedUser(b.SimulatedUser),
	}
	if b.Level != nil {
		t.Level = *b.Level
	}
	if b.Expected != nil {
		b.Expected.apply(&t.Expected)
	}
	return t
}

// apiTestUpdate is the body of update-test: the fields present change.
type apiTestUpdate struct {
	ID          *string           `json:"id,omitempty" doc:"If present, must equal the id in the path."`
	DomainID    *string           `json:"domain_id,omitempty" doc:"A new domain moves the test (to the end of its level)."`
	Level       *int              `json:"level,omitempty" doc:"0 to 1000. A new level moves the test (to the end of the level)."`
	Name        *string           `json:"name,omitempty"`
	Prompt      *string           `json:"prompt,omitempty"`
	Expected    *apiExpectedInput `json:"expected,omitempty"`
	EvaluatorID *string           `json:"evaluator_id,omitempty" doc:"Evaluator override; empty means the domain's."`
	Tools       []string          `json:"tools,omitempty" doc:"The list replaces the current one."`
	// Switching kinds: send the new one and clear the old (prompt "",
	// turns or simulated_user null).
	Turns         optional[[]apiTurnInput]        `json:"turns,omitzero" doc:"The list replaces the current turns; null removes them."`
	SimulatedUser optional[apiSimulatedUserInput] `json:"simulated_user,omitzero" doc:"Replaces the simulated user; null removes it."`
}

func (f *apiTestUpdate) apply(t *harness.Test) {
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
	if f.Turns.Set {
		t.Turns = nil
		if f.Turns.Value != nil {
			t.Turns = harnessTurns(*f.Turns.Value)
		}
	}
	if f.SimulatedUser.Set {
		t.SimulatedUser = harnessSimulatedUser(f.SimulatedUser.Value)
	}
}

// apiTestMove is the body of move-test.
type apiTestMove struct {
	DomainID *string `json:"domain_id,omitempty" api:"required" doc:"Target domain; it must exist."`
	Level    *int    `json:"level,omitempty" api:"required" doc:"Target level, 0 to 1000."`
}

type getTestInput struct {
	TestID string `path:"test_id" doc:"Test id."`
	IfNoneMatchHeader
}

type deleteTestInput struct {
	TestID string `path:"test_id" doc:"Test id."`
	IfMatchHeader
}

type testOutput struct {
	ETag string `header:"ETag" doc:"The test's entity tag, for If-Match and If-None-Match."`
	Body apiTest
}

func newTestOutput(t harness.Test) *testOutput {
	b := toAPITest(t)
	return &testOutput{ETag: etagOf(b), Body: b}
}

// listTestsQuery filters tests. huma query parameters cannot be pointers,
// so an absent level is -1.
type listTestsQuery struct {
	Domain string `query:"domain" doc:"Only tests of this domain."`
	Level  int    `query:"level" default:"-1" minimum:"-1" maximum:"1000" doc:"Only tests of this level (-1 or absent: all levels)."`
	PageParams
}

type listTestsOutput struct {
	Body apiTestList
}

type createTestInput struct {
	Body apiTestCreate
}

type updateTestInput struct {
	TestID string `path:"test_id" doc:"Test id."`
	IfMatchHeader
	Body apiTestUpdate
}

type moveTestInput struct {
	TestID string `path:"test_id" doc:"Test id."`
	IfMatchHeader
	Body apiTestMove
}

// registerTests registers the test operations.
func registerTests(api huma.API, store testStore, log *slog.Logger) {
	h := &testHandler{problems{log}, store}
	tags := []string{tagTests}
	register(api, huma.Operation{
		OperationID: "list-tests", Method: http.MethodGet, Path: "/api/settings/tests",
		Summary: "List tests", Tags: tags,
		Description: "Ordered by domain, level and position in the level. `domain` and `level` filter, alone or together;" + pagingDoc,
	}, h.list)
	register(api, huma.Operation{
		OperationID: "get-test", Method: http.MethodGet, Path: "/api/settings/tests/{test_id}",
		Summary: "Get a test", Tags: tags, Description: "404 for an unknown id." + etagReadDoc,
		Errors: []int{http.StatusNotFound},
	}, h.get)
	documentNotModified(api, "/api/settings/tests/{test_id}")
	register(api, huma.Operation{
		OperationID: "create-test", Method: http.MethodPost, Path: "/api/settings/tests",
		Summary: "Create a test", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "The test goes at the end of its level. Without an id, one is generated. " +
			"409 when the id exists; 422 for an unknown domain, evaluator or tool, or an answer its type cannot use.",
		Errors: []int{http.StatusConflict},
	}, h.create)
	register(api, huma.Operation{
		OperationID: "update-test", Method: http.MethodPut, Path: "/api/settings/tests/{test_id}",
		Summary: "Update a test", Tags: tags,
		Description: "Changes the fields present in the body and keeps the others; a new domain_id or level moves the test. " +
			"In expected, null clears tolerance or arguments. 409 when a file involved was edited by hand since the last sync." + etagWriteDoc,
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed},
	}, h.update)
	register(api, huma.Operation{
		OperationID: "delete-test", Method: http.MethodDelete, Path: "/api/settings/tests/{test_id}",
		Summary: "Delete a test", Tags: tags,
		Description: "404 for an unknown id; 409 when its level's file was edited by hand since the last sync. " +
			"With If-Match, the test is deleted only if its current ETag is listed (or the list is *), else 412.",
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed},
	}, h.delete)
	register(api, huma.Operation{
		OperationID: "move-test", Method: http.MethodPost, Path: "/api/settings/tests/{test_id}/move",
		Summary: "Move a test to another domain or level", Tags: tags,
		Description: "The test goes at the end of the target level. A target domain that does not exist is a 422." + etagWriteDoc,
		Errors:      []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed},
	}, h.move)
}

func (h *testHandler) list(ctx context.Context, in *listTestsQuery) (*listTestsOutput, error) {
	f := catalog.TestFilter{DomainID: in.Domain}
	if in.Level >= 0 {
		f.Level = &in.Level
	}
	all, err := h.store.Tests(ctx, f)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	ts, total := page(all, in.PageParams)
	return &listTestsOutput{Body: apiTestList{Tests: toAPITests(ts), Total: total}}, nil
}

func (h *testHandler) get(ctx context.Context, in *getTestInput) (*testOutput, error) {
	t, err := h.store.Test(ctx, in.TestID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	out := newTestOutput(t)
	return out, in.IfNoneMatchHeader.check(out.ETag)
}

func (h *testHandler) create(ctx context.Context, in *createTestInput) (*testOutput, error) {
	ve := &harness.ValidationError{}
	if in.Body.Level == nil {
		ve.Add("level", "is required")
	}
	if in.Body.DomainID == "" {
		ve.Add("domain_id", "is required")
	}
	if err := ve.Err(); err != nil {
		return nil, h.problem(ctx, err)
	}
	t, err := h.store.CreateTest(ctx, in.Body.test())
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return newTestOutput(t), nil
}

func (h *testHandler) update(ctx context.Context, in *updateTestInput) (*testOutput, error) {
	t, err := h.store.UpdateTest(ctx, in.TestID, func(t *harness.Test) error {
		if err := in.IfMatchHeader.check(etagOf(toAPITest(*t))); err != nil {
			return err
		}
		in.Body.apply(t)
		return nil
	})
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return newTestOutput(t), nil
}

func (h *testHandler) delete(ctx context.Context, in *deleteTestInput) (*successOutput, error) {
	check := func(t harness.Test) error { return in.IfMatchHeader.check(etagOf(toAPITest(t))) }
	if err := h.store.DeleteTestIf(ctx, in.TestID, check); err != nil {
		return nil, h.problem(ctx, err)
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
		return nil, h.problem(ctx, err)
	}
	// A move is an update of domain_id and level: the same precondition,
	// checked under the same lock.
	t, err := h.store.UpdateTest(ctx, in.TestID, func(t *harness.Test) error {
		if err := in.IfMatchHeader.check(etagOf(toAPITest(*t))); err != nil {
			return err
		}
		t.DomainID, t.Level = *in.Body.DomainID, *in.Body.Level
		return nil
	})
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return newTestOutput(t), nil
}
