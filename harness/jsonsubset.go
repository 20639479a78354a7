package harness

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// JSONSubset reports whether want is contained in got, two decoded JSON
// values (as encoding/json decodes into any: numbers are float64):
// objects may have extra keys at any depth, arrays must have the same
// length with each element contained, other values are equal. It is the
// rule expected tool call arguments follow (the tool_call expected type,
// expected.trajectory.arguments).
func JSONSubset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !JSONSubset(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !JSONSubset(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, got)
	}
}

// NormalizeJSON gives v the form encoding/json decodes JSON into, by a
// JSON round trip: integers read from YAML (int, uint64) become float64,
// typed maps and slices become map[string]any and []any. Compare expected
// arguments written in YAML or Go with JSONSubset after it.
func NormalizeJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ParseArguments decodes the arguments of a tool call as the model sent
// them. Blank arguments are the empty object; anything that is not JSON
// is an error (the model's output is untrusted: it never panics). The
// value may be any JSON value, not only an object.
func ParseArguments(arguments string) (any, error) {
	if strings.TrimSpace(arguments) == "" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal([]byte(arguments), &v); err != nil {
		return nil, fmt.Errorf("arguments are not JSON: %w", err)
	}
	return v, nil
}
