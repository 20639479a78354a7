package harness

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestRecordTextChecks pins what the validators report about a record's
// text (NUL, invalid UTF-8, control characters in names, bad map keys)
// and its size, field by field and in order: one walk of the record does
// both, and a bad map key stops the text checks below it but not the
// size count.
func TestRecordTextChecks(t *testing.T) {
	v := Validator{}
	big := strings.Repeat("x", MaxRecordBytes+1)
	half := strings.Repeat("y", MaxRecordBytes/2+1)
	sizeMsg := func(largest int, kind string, total int) string {
		return fmt.Sprintf("is %d bytes; a %s holds at most %d bytes of text (1 MiB, as the API that creates one takes), and this one holds %d",
			largest, kind, MaxRecordBytes, total)
	}
	cases := []struct {
		name  string
		check func() error
		want  []FieldError
	}{
		{"good", func() error { return v.Agent(&Agent{ID: "a", Name: "A"}) }, nil},
		{"control characters in a name", func() error {
			return v.Agent(&Agent{ID: "a", Name: "a\tb", Description: "tabs\tand\nlines are fine"})
		}, []FieldError{{Field: "name", Message: "contains a control character"}}},
		{"NUL and bad UTF-8 in a name", func() error {
			return v.Agent(&Agent{ID: "a", Name: "a\x00b", Description: "\xff"})
		}, []FieldError{
			{Field: "name", Message: "contains a NUL character"},
			{Field: "description", Message: "is not valid UTF-8"},
		}},
		{"bad key stops the text check below it", func() error {
			return v.Evaluator(&EvaluatorConfig{ID: "e", Name: "E", Config: map[string]any{
				"b\xff": map[string]any{"inner": "\x00"}, "a": "ok", "c": "\x00",
			}})
		}, []FieldError{
			{Field: "config.b\xff", Message: "the key is not valid UTF-8"},
			{Field: "config.c", Message: "contains a NUL character"},
		}},
		{"nested", func() error {
			return v.Test(&Test{ID: "t", DomainID: "d", Level: 1, Prompt: "p", Expected: Expected{
				Answer: "f", Type: "tool_call", Arguments: map[string]any{
					"a": []any{"ok", map[string]any{"k\x00": 1, "v": "\xff", "w": []any{ptr("\x00")}}},
				},
			}})
		}, []FieldError{
			{Field: "expected.arguments.a[1].k\x00", Message: "the key contains a NUL character"},
			{Field: "expected.arguments.a[1].v", Message: "is not valid UTF-8"},
			{Field: "expected.arguments.a[1].w[0]", Message: "contains a NUL character"},
		}},
		{"oversize record", func() error {
			return v.Domain(&Domain{ID: "d", Name: "D", Description: big})
		}, []FieldError{{Field: "description", Message: sizeMsg(len(big), "domain", len(big)+2)}}},
		{"oversize: the first of two equal strings is named", func() error {
			return v.Agent(&Agent{ID: "a", Description: half, SystemPrompt: half})
		}, []FieldError{{Field: "description", Message: sizeMsg(len(half), "agent", 2*len(half)+1)}}},
		{"oversize below a bad key: text check stops, size count goes on", func() error {
			return v.Evaluator(&EvaluatorConfig{ID: "e", Name: "E", Config: map[string]any{
				"\xff": map[string]any{"big": big + "\x00"},
			}})
		}, []FieldError{
			{Field: "config.\xff", Message: "the key is not valid UTF-8"},
			{Field: "config.\xff.big", Message: sizeMsg(len(big)+1, "evaluator", len(big)+1+1+3+2)},
		}},
		{"oversize bytes count, but are not text", func() error {
			return v.Evaluator(&EvaluatorConfig{ID: "e", Name: "E", Config: map[string]any{
				"blob": []byte(big + "\x00\xff"),
			}})
		}, []FieldError{{Field: "config.blob", Message: sizeMsg(len(big)+2, "evaluator", len(big)+2+4+2)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check()
			var got []FieldError
			var ve *ValidationError
			if errors.As(err, &ve) {
				got = ve.Fields
			} else if err != nil {
				t.Fatalf("err = %v (%T), want a *ValidationError", err, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("fields:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestCheckTextAlone pins CheckText on values that are not records.
func TestCheckTextAlone(t *testing.T) {
	type Inner struct {
		Text  string `json:"text"`
		Skip  string `json:"-"`
		Plain string
	}
	type outer struct {
		Inner
		Items []*Inner         `json:"items"`
		Meta  map[int]string   `json:"meta"`
		Data  []byte           `json:"data"`
		More  map[string]Inner `json:"more,omitempty"`
	}
	ve := &ValidationError{}
	CheckText(ve, "in", outer{
		Inner: Inner{Text: "\x00", Skip: "\x00", Plain: "\xff"},
		Items: []*Inner{nil, {Text: "\xff"}},
		Meta:  map[int]string{10: "\x00", 2: "ok"},
		Data:  []byte{0, 0xff},
		More:  map[string]Inner{"z": {Plain: "\x00"}, "a\x00": {Text: "\x00"}},
	})
	CheckText(ve, "q", "\xff")
	want := []FieldError{
		{Field: "in.text", Message: "contains a NUL character"},
		{Field: "in.Plain", Message: "is not valid UTF-8"},
		{Field: "in.items[1].text", Message: "is not valid UTF-8"},
		{Field: "in.meta.10", Message: "contains a NUL character"},
		{Field: "in.more.a\x00", Message: "the key contains a NUL character"},
		{Field: "in.more.z.Plain", Message: "contains a NUL character"},
		{Field: "q", Message: "is not valid UTF-8"},
	}
	if !reflect.DeepEqual(ve.Fields, want) {
		t.Errorf("fields:\n got %q\nwant %q", ve.Fields, want)
	}
}
