package server

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// fill returns a T with every field set, recursively: strings "s", numbers
// 1, booleans true, one element in each slice and map, pointers to filled
// values, "v" in each any.
func fill[T any]() T {
	var v T
	fillValue(reflect.ValueOf(&v).Elem(), 0)
	return v
}

func fillValue(v reflect.Value, depth int) {
	if depth > 10 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(1)
	case reflect.Uint64, reflect.Uint:
		v.SetUint(1)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillValue(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fillValue(k, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fillValue(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf("v"))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillValue(v.Field(i), depth+1)
			}
		}
	}
}

// sameJSON reports whether a and b encode to the same JSON value.
func sameJSON(t *testing.T, what string, lib, api any) {
	t.Helper()
	decode := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var out any
		json.Unmarshal(b, &out)
		return out
	}
	if l, a := decode(lib), withoutAPIOnly(decode(api)); !reflect.DeepEqual(l, a) {
		lb, _ := json.Marshal(lib)
		ab, _ := json.Marshal(api)
		t.Errorf("%s: the API's JSON differs from the library's.\nlibrary: %s\nAPI:     %s\n"+
			"A field added to the library type needs its API type and mapping (server/), or a decision to keep it out of the API.",
			what, lb, ab)
	}
}

// apiOnly are the fields the API adds to a library type's JSON on
// purpose, by the name of the object holding them: a tool's MCP server
// says which transport it uses (stdio or http), derived from the others.
var apiOnly = map[string][]string{"mcp": {"transport"}}

// withoutAPIOnly removes the apiOnly fields from a decoded JSON value.
func withoutAPIOnly(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if m, ok := x.(map[string]any); ok {
				for _, f := range apiOnly[k] {
					delete(m, f)
				}
			}
			withoutAPIOnly(x)
		}
	case []any:
		for _, x := range v {
			withoutAPIOnly(x)
		}
	}
	return v
}

// TestAPITypesMirrorLibraryJSON checks that each API type, mapped from a
// library value with every field set, encodes to the library type's own
// JSON: the answers did not change when the server got its own types, and a
// field added to a library type is not dropped by the API unnoticed.
func TestAPITypesMirrorLibraryJSON(t *testing.T) {
	t.Parallel()
	sameJSON(t, "Domain", fill[harness.Domain](), toAPIDomain(fill[harness.Domain]()))
	sameJSON(t, "Level", fill[harness.LevelConfig](), toAPILevel(fill[harness.LevelConfig]()))
	sameJSON(t, "Test", fill[harness.Test](), toAPITest(fill[harness.Test]()))
	sameJSON(t, "Evaluator", fill[harness.EvaluatorConfig](), toAPIEvaluator(fill[harness.EvaluatorConfig]()))
	sameJSON(t, "Tool", fill[harness.ToolDefinition](), toAPITool(fill[harness.ToolDefinition]()))
	snap := fill[harness.Snapshot]()
	sameJSON(t, "Definitions", snap, toAPIDefinitions(&snap))

	sameJSON(t, "RunInfo", fill[runs.Info](), toAPIRunInfo(fill[runs.Info]()))
	sameJSON(t, "TestResult", fill[[]runs.Result](), toAPIResults(fill[[]runs.Result]()))
	sameJSON(t, "RunStats", fill[runs.Stats](), toAPIStats(fill[runs.Stats]()))
	sameJSON(t, "EngineStatus", fill[engine.Status](), toAPIEngineStatus(fill[engine.Status]()))
	live := fill[engine.LiveMatrix]()
	live.Domains = runs.Matrix{"d": {"1": fill[runs.Cell]()}}
	sameJSON(t, "Matrix", live, toAPIMatrix(live))

	sameJSON(t, "Agent", fill[harness.Agent](), toAPIAgent(fill[harness.Agent]()))
	detail := fill[agent.Detail]()
	sameJSON(t, "AgentDetail", detail, toAPIAgentDetail(&detail))
	sameJSON(t, "Channel", fill[harness.ChannelConfig](), toAPIChannel(fill[harness.ChannelConfig]()))
	file := fill[kb.File]()
	file.Content = nil                     // only read-kb-file carries content, as its own type
	file.Format, file.EmptyPages = "", nil // likewise: set by Read, answered by read-kb-file
	sameJSON(t, "KBFile", file, toAPIKBFile(file))

	// Answers that add success to a library value.
	withSuccess := func(v any) map[string]any {
		b, _ := json.Marshal(v)
		var m map[string]any
		json.Unmarshal(b, &m)
		m["success"] = true
		return m
	}
	chat := fill[agent.ChatResult]()
	sameJSON(t, "ChatReply", withSuccess(chat), toAPIChatReply(&chat))
	imp := fill[catalog.ImportResult]()
	sameJSON(t, "ImportResult", withSuccess(imp), toAPIImportResult(&imp))
	sync := fill[catalog.SyncResult]()
	want := withSuccess(sync)
	want["success"] = false // it has an error
	sameJSON(t, "SyncResult", want, toAPISyncResult(&sync))
	sameJSON(t, "ChannelState", withSuccess(fill[harness.ChannelConfig]()), toAPIChannelState(fill[harness.ChannelConfig]()))
}
