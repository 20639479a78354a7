package harness_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

func ptr[T any](v T) *T { return &v }

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     harness.Params
		field string // "" when valid
	}{
		{"none", harness.Params{}, ""},
		{"all in range", harness.Params{Temperature: ptr(2.0), TopP: ptr(1.0), MaxTokens: ptr(1), Seed: ptr(int64(math.MinInt64))}, ""},
		{"temperature 0", harness.Params{Temperature: ptr(0.0)}, ""},
		{"temperature below", harness.Params{Temperature: ptr(-1.0)}, "temperature"},
		{"temperature above", harness.Params{Temperature: ptr(2.01)}, "temperature"},
		{"temperature NaN", harness.Params{Temperature: ptr(math.NaN())}, "temperature"},
		{"top_p 0", harness.Params{TopP: ptr(0.0)}, "top_p"},
		{"top_p above", harness.Params{TopP: ptr(1.5)}, "top_p"},
		{"max_tokens 0", harness.Params{MaxTokens: ptr(0)}, "max_tokens"},
		{"max_tokens huge", harness.Params{MaxTokens: ptr(harness.MaxParamTokens + 1)}, "max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("valid params refused: %v", err)
				}
				return
			}
			var ve *harness.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, harness.ErrInvalid) || len(ve.Fields) != 1 || ve.Fields[0].Field != tc.field {
				t.Fatalf("error %v; want one field error on %s", err, tc.field)
			}
		})
	}
}

func TestParamsMerge(t *testing.T) {
	level := harness.Params{Temperature: ptr(0.2), TopP: ptr(0.9), MaxTokens: ptr(100)}
	run := harness.Params{Temperature: ptr(0.7), Seed: ptr(int64(3))}
	got := level.Merge(run)
	want := harness.Params{Temperature: ptr(0.7), TopP: ptr(0.9), MaxTokens: ptr(100), Seed: ptr(int64(3))}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merge = %+v, want %+v", got.Map(), want.Map())
	}
	if !reflect.DeepEqual(harness.Params{}.Merge(run), run) || !reflect.DeepEqual(level.Merge(harness.Params{}), level) {
		t.Error("merging with nothing changed the parameters")
	}

	var req harness.ChatRequest
	got.Apply(&req)
	if *req.Temperature != 0.7 || *req.TopP != 0.9 || req.MaxTokens != 100 || *req.Seed != 3 {
		t.Errorf("applied request = %+v", req)
	}
	var untouched harness.ChatRequest
	harness.Params{}.Apply(&untouched)
	if !reflect.DeepEqual(untouched, harness.ChatRequest{}) {
		t.Errorf("empty params changed the request: %+v", untouched)
	}
}

func TestParamsMap(t *testing.T) {
	if m := (harness.Params{}).Map(); m == nil || len(m) != 0 {
		t.Errorf("empty params map = %#v", m)
	}
	p := harness.Params{Temperature: ptr(0.5), Seed: ptr(int64(1)<<62 + 1)}
	m := p.Map()
	if len(m) != 2 {
		t.Fatalf("map has keys not set: %#v", m)
	}
	// Through JSON and back, as a stored run's configuration goes.
	b, _ := json.Marshal(m)
	if string(b) != `{"seed":4611686018427387905,"temperature":0.5}` {
		t.Errorf("JSON = %s", b)
	}
	var plain map[string]any
	json.Unmarshal(b, &plain)
	back, err := harness.ParamsFromMap(plain)
	if err != nil || *back.Temperature != 0.5 || back.Seed == nil || back.TopP != nil || back.MaxTokens != nil {
		t.Errorf("from a plain decode = %+v, %v", back.Map(), err)
	}
	exact := map[string]any{"seed": json.Number("4611686018427387905"), "max_tokens": json.Number("7")}
	back, err = harness.ParamsFromMap(exact)
	if err != nil || *back.Seed != int64(1)<<62+1 || *back.MaxTokens != 7 {
		t.Errorf("from json.Number = %+v, %v", back.Map(), err)
	}
	if _, err := harness.ParamsFromMap(map[string]any{"temperature": "hot"}); err == nil {
		t.Error("a string temperature was read")
	}
}
