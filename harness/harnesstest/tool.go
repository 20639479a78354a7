package harnesstest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// ToolCase is one call of the tool under test.
type ToolCase struct {
	Name string
	// Arguments is the JSON object of arguments, as a model sends it.
	Arguments string
	// WantErr says the call must fail; otherwise it must succeed.
	WantErr bool
}

// TestTool checks that tool behaves as every harness.Tool must. cases are
// calls with their expected success; without any, the kit calls it with
// "{}" and accepts an error or an output.
//
// The checks, each a subtest:
//   - definition: Definition is valid as a tool record's function
//     (harness.Validator.Tool: a name of ^[a-zA-Z0-9_-]{1,64}$, parameters
//     a JSON Schema object whose required names exist), and the same each
//     time;
//   - cases: each call succeeds or fails as the case says, and an output
//     is valid JSON (empty is taken as {}); every call has a CallID of its
//     own, as the tool loop gives it;
//   - repeated-call: each case is called twice with the same CallID, as
//     the server repeats a call that a plugin's crash cut short; a call
//     that succeeded must succeed again, with valid JSON, and one the case
//     says fails must fail again;
//   - nil-request: Call(ctx, nil) returns an error, without panicking;
//   - bad-arguments: arguments that are nil, not JSON, or not an object
//     give an error or a valid output, without panicking;
//   - cancelled-context: with a context already cancelled, Call returns
//     within 2 s;
//   - concurrent: 8 goroutines make the calls at once, and call Definition
//     (run with -race).
func TestTool(t *testing.T, tool harness.Tool, cases ...ToolCase) {
	t.Helper()
	given := len(cases) > 0
	if !given {
		cases = []ToolCase{{Name: "empty arguments", Arguments: "{}"}}
	}
	for i := range cases {
		if cases[i].Name == "" {
			cases[i].Name = fmt.Sprintf("case %d", i)
		}
	}

	t.Run("definition", func(t *testing.T) {
		o := call(callLimit, func() (harness.FunctionDef, error) { return tool.Definition(), nil })
		if p := o.problem("Definition"); p != "" {
			t.Fatal(p)
		}
		def := o.v
		id := def.Name
		if !harness.ValidID(id) {
			id = "harnesstest"
		}
		rec := harness.ToolDefinition{ID: id, Function: def}
		if err := (harness.Validator{}).Tool(&rec); err != nil {
			t.Errorf("Definition %+v is not valid: %v", def, err)
		}
		if again := tool.Definition(); !reflect.DeepEqual(again, def) {
			t.Errorf("Definition changed between calls: %+v, then %+v", def, again)
		}
	})

	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			callTool(t, tool, t.Context(), c, given)
		}
	})

	t.Run("repeated-call", func(t *testing.T) {
		for _, c := range cases {
			req := toolRequest(c)
			first := call(callLimit, func() (*harness.ToolResult, error) { return tool.Call(t.Context(), req) })
			if p := first.problem("Call"); p != "" {
				t.Errorf("%s: %s", c.Name, p)
				continue
			}
			again := *req
			again.Arguments = json.RawMessage(c.Arguments)
			o := call(callLimit, func() (*harness.ToolResult, error) { return tool.Call(t.Context(), &again) })
			switch {
			case o.problem("Call") != "":
				t.Errorf("%s, repeated: %s", c.Name, o.problem("Call"))
			case c.WantErr && o.err == nil:
				t.Errorf("%s, repeated: Call succeeded (output %s), want an error", c.Name, outputOf(o.v))
			case first.err == nil && o.err != nil:
				t.Errorf("%s: Call succeeded, then failed when repeated with the same CallID %q: %v", c.Name, req.CallID, o.err)
			case o.err == nil:
				checkOutput(t, c.Name+", repeated", o.v)
			}
		}
	})

	t.Run("nil-request", func(t *testing.T) {
		o := call(callLimit, func() (*harness.ToolResult, error) { return tool.Call(t.Context(), nil) })
		if p := o.problem("Call(ctx, nil)"); p != "" {
			t.Fatal(p)
		}
		if o.err == nil {
			t.Errorf("Call(ctx, nil) returned %+v and no error", o.v)
		}
	})

	t.Run("bad-arguments", func(t *testing.T) {
		for _, c := range []struct {
			name string
			args json.RawMessage
		}{
			{"nil arguments", nil},
			{"arguments not JSON", json.RawMessage("{not json")},
			{"arguments not an object", json.RawMessage(`[1,2,3]`)},
			{"unknown argument", json.RawMessage(`{"harnesstest_unknown": true}`)},
		} {
			o := call(callLimit, func() (*harness.ToolResult, error) {
				req := toolRequest(ToolCase{})
				req.Arguments = c.args
				return tool.Call(t.Context(), req)
			})
			if p := o.problem("Call with " + c.name); p != "" {
				t.Error(p)
			} else if o.err == nil {
				checkOutput(t, c.name, o.v)
			}
		}
	})

	t.Run("cancelled-context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for _, c := range cases {
			o := call(promptLimit, func() (*harness.ToolResult, error) {
				return tool.Call(ctx, toolRequest(c))
			})
			if p := o.problem("Call with a cancelled context"); p != "" {
				t.Errorf("%s: %s", c.Name, p)
			} else if o.err == nil {
				checkOutput(t, c.Name, o.v)
			}
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for g := range concurrency {
			wg.Go(func() {
				for i := range 2 * len(cases) {
					_ = tool.Definition()
					callTool(t, tool, t.Context(), cases[(g+i)%len(cases)], given)
				}
			})
		}
		wg.Wait()
	})
}

// callTool makes one call and checks it against its case; an unexpected
// error is reported only when strict.
func callTool(t *testing.T, tool harness.Tool, ctx context.Context, c ToolCase, strict bool) {
	t.Helper()
	req := toolRequest(c)
	o := call(callLimit, func() (*harness.ToolResult, error) { return tool.Call(ctx, req) })
	switch {
	case o.problem("Call") != "":
		t.Errorf("%s: %s", c.Name, o.problem("Call"))
	case c.WantErr && o.err == nil:
		t.Errorf("%s: Call succeeded (output %s), want an error", c.Name, outputOf(o.v))
	case !c.WantErr && o.err != nil && strict:
		t.Errorf("%s: Call: %v", c.Name, o.err)
	case o.err == nil:
		checkOutput(t, c.Name, o.v)
	}
}

// callIDs numbers the calls of the kit, so that each has its own CallID.
var callIDs atomic.Int64

// toolRequest is the request of a case's call, with a CallID no other
// call of the kit has.
func toolRequest(c ToolCase) *harness.ToolCallRequest {
	return &harness.ToolCallRequest{CallID: "harnesstest_" + strconv.FormatInt(callIDs.Add(1), 10),
		Arguments: json.RawMessage(c.Arguments), AgentID: "harnesstest", UserID: "harnesstest:1"}
}

func checkOutput(t *testing.T, name string, res *harness.ToolResult) {
	t.Helper()
	if res == nil {
		t.Errorf("%s: Call returned neither a result nor an error", name)
		return
	}
	if len(res.Output) > 0 && !json.Valid(res.Output) {
		t.Errorf("%s: output %q is not JSON", name, res.Output)
	}
}

func outputOf(res *harness.ToolResult) string {
	if res == nil {
		return "nil"
	}
	return string(res.Output)
}
