package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestStrictFiles writes one file over the testdata tree and checks the
// errors sync reports for it: file, line, key and message, in order.
func TestStrictFiles(t *testing.T) {
	t.Parallel()
	type want struct {
		line int
		key  string
		msg  string // a fragment of the error
	}
	cases := []struct {
		name string
		rel  string
		body string
		errs []want
		// gone are tests of the file that must not load.
		gone []string
	}{
		{
			name: "typo in a level key",
			rel:  "domains/math/level-1.yaml",
			body: "pass_treshold: 0.9\ntests:\n  - id: add-small\n    prompt: p\n    expected: {answer: '4'}\n",
			errs: []want{{1, "pass_treshold", `unknown key "pass_treshold" (did you mean "pass_threshold"?)`}},
			gone: []string{"add-small"},
		},
		{
			name: "typo in a nested key of a test",
			rel:  "domains/math/level-1.yaml",
			body: "tests:\n  - id: add-small\n    prompt: p\n    expected:\n      answer: '4'\n      typ: numeric\n",
			errs: []want{{6, "typ", `unknown key "typ" (did you mean "type"?)`}},
			gone: []string{"add-small"},
		},
		{
			name: "typo in a turn of a multi-turn test",
			rel:  "domains/math/level-1.yaml",
			body: "tests:\n  - id: add-small\n    turns:\n      - usr: Hi\n        expected: {answer: '4'}\n",
			errs: []want{{4, "usr", `unknown key "usr" (did you mean "user"?)`}},
			gone: []string{"add-small"},
		},
		{
			name: "typo in a simulated user",
			rel:  "domains/math/level-1.yaml",
			body: "tests:\n  - id: add-small\n    simulated_user:\n      persona: p\n      goal: g\n      max_turn: 3\n",
			errs: []want{{6, "max_turn", `unknown key "max_turn" (did you mean "max_turns"?)`}},
			gone: []string{"add-small"},
		},
		{
			name: "every unknown key is reported, in flow style too",
			rel:  "domains/math/level-1.yaml",
			body: "system_promt: x\ntests:\n  - id: ok\n    prompt: p\n    expected: {answer: '4'}\n" +
				"  - id: add-small\n    promt: p\n    expected: {answer: '4', tolerence: 0.1}\n",
			errs: []want{
				{1, "system_promt", `did you mean "system_prompt"?`},
				{7, "promt", `did you mean "prompt"?`},
				{8, "tolerence", `did you mean "tolerance"?`},
			},
			gone: []string{"ok", "add-small"},
		},
		{
			name: "a test takes no domain_id: the file says it",
			rel:  "domains/math/level-1.yaml",
			body: "tests:\n  - id: add-small\n    domain_id: geo\n    prompt: p\n    expected: {answer: '4'}\n",
			errs: []want{{3, "domain_id", `unknown key "domain_id"`}},
			gone: []string{"add-small"},
		},
		{
			name: "a key far from every known one lists them",
			rel:  "domains/math/domain.yaml",
			body: "name: Mathematics\nevaluator_id: number\nowner: alice\n",
			errs: []want{{3, "owner", "known keys: color, description, enabled, evaluator_id, icon, id, name, system_prompt"}},
			gone: []string{"add-small"},
		},
		{
			name: "typo in a sampling parameter",
			rel:  "domains/math/level-1.yaml",
			body: "params:\n  temprature: 0.5\ntests:\n  - id: add-small\n    prompt: p\n    expected: {answer: '4'}\n",
			errs: []want{{2, "temprature", `did you mean "temperature"?`}},
			gone: []string{"add-small"},
		},
		{
			name: "sampling parameter out of range",
			rel:  "domains/math/level-1.yaml",
			body: "params:\n  top_p: 0.5\n  max_tokens: 0\ntests:\n  - id: add-small\n    prompt: p\n    expected: {answer: '4'}\n",
			errs: []want{{3, "", "params.max_tokens"}},
			gone: []string{"add-small"},
		},
		{
			name: "evaluator key",
			rel:  "evaluators/number.yaml",
			body: "name: Number\nextration_regex: '(\\d+)'\n",
			errs: []want{{2, "extration_regex", `did you mean "extraction_regex"?`}},
		},
		{
			name: "tool key inside function",
			rel:  "tools/weather.yaml",
			body: "name: Weather\nfunction:\n  name: get_weather\n  parameter: {type: object}\n",
			errs: []want{{4, "parameter", `did you mean "parameters"?`}},
		},
		{
			name: "YAML syntax error",
			rel:  "domains/math/level-1.yaml",
			body: "tests:\n  - id: add-small\n    prompt: p\n    expected: {answer: '4'}\n  - id: [oops\n",
			errs: []want{{5, "", "not found"}},
			gone: []string{"add-small"},
		},
		{
			name: "value of the wrong kind",
			rel:  "domains/math/level-1.yaml",
			body: "system_prompt: x\n\ntests: 3\n",
			errs: []want{{3, "", ""}},
			gone: []string{"add-small"},
		},
		{
			name: "two documents",
			rel:  "evaluators/extra.yaml",
			body: "name: Extra\n---\nname: Other\n",
			errs: []want{{3, "", "one YAML document"}},
		},
		{
			name: "a validation error gives the line of its field",
			rel:  "domains/math/level-1.yaml",
			body: "tests:\n  - id: a\n    prompt: p\n    expected: {answer: '4'}\n  - id: b\n    prompt: p\n    expected:\n      answer: '4'\n      type: telepathy\n",
			errs: []want{{9, "", "tests[1].expected.type"}},
			gone: []string{"a", "b"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDefinitions(t)
			c, _ := openAt(t, dir)
			writeFile(t, dir, tc.rel, tc.body)
			res := doSync(t, c)
			var mine []FileError
			for _, fe := range res.Errors {
				if fe.File == tc.rel {
					mine = append(mine, fe)
				}
			}
			if len(mine) != len(tc.errs) {
				t.Fatalf("errors of %s: %+v, want %d", tc.rel, res.Errors, len(tc.errs))
			}
			for i, w := range tc.errs {
				fe := mine[i]
				if fe.Line != w.line || fe.Key != w.key || !strings.Contains(fe.Error, w.msg) {
					t.Errorf("error %d = %+v, want line %d, key %q, message with %q", i, fe, w.line, w.key, w.msg)
				}
				if want := fmt.Sprintf("%s:%d: ", tc.rel, w.line); !strings.HasPrefix(fe.String(), want) {
					t.Errorf("String() = %q, want it to start with %q", fe.String(), want)
				}
			}
			for _, id := range tc.gone {
				if _, err := c.Test(context.Background(), id); err == nil {
					t.Errorf("test %s loaded from a refused file", id)
				}
			}
			// The JSON of the list carries the line and key.
			b, _ := json.Marshal(mine[0])
			if !strings.Contains(string(b), fmt.Sprintf(`"line":%d`, tc.errs[0].line)) {
				t.Errorf("JSON %s has no line", b)
			}
		})
	}
}

// Free-form values (an evaluator's config, a tool's parameters and mock
// response, a tool call's arguments) take any keys; anchors and merge keys
// work.
func TestStrictFilesAllowFreeFormValues(t *testing.T) {
	t.Parallel()
	dir := copyDefinitions(t)
	writeFile(t, dir, "evaluators/extra.yaml", "name: Extra\nconfig: {anything: 1, nested: {deep: [1, 2]}}\n")
	writeFile(t, dir, "tools/extra.yaml", "name: Extra\nfunction:\n  name: extra\n  parameters: {type: object, x-custom: 1}\nmock_response: {whatever: [a]}\n")
	writeFile(t, dir, "domains/math/level-3.yaml", "tests:\n"+
		"  - id: one\n    prompt: &p p\n    expected: &exp {answer: f, type: tool_call, arguments: {city: Paris, unit: c}}\n"+
		"  - id: two\n    prompt: *p\n    expected:\n      <<: *exp\n")
	c, res := openAt(t, dir)
	if len(res.Errors) != 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	two, err := c.Test(context.Background(), "two")
	if err != nil || two.Prompt != "p" || two.Expected.Arguments["unit"] != "c" {
		t.Fatalf("test two = %+v, %v", two, err)
	}
}

func TestUnknownKeyMessage(t *testing.T) {
	t.Parallel()
	fields := yamlFields(reflect.TypeFor[levelDoc]())
	for key, want := range map[string]string{
		"pass_treshold": `unknown key "pass_treshold" (did you mean "pass_threshold"?)`,
		"Tests":         `unknown key "Tests" (did you mean "tests"?)`,
		"test":          `unknown key "test" (did you mean "tests"?)`,
		"prompt":        `unknown key "prompt" (did you mean "system_prompt"?)`,
		"zzz":           `unknown key "zzz" (known keys: params, pass_threshold, system_prompt, system_prompt_mode, tests, tools)`,
	} {
		if got := unknownKeyMessage(key, fields); got != want {
			t.Errorf("%s: got %s, want %s", key, got, want)
		}
	}
}

func TestLineOfField(t *testing.T) {
	t.Parallel()
	data := []byte("system_prompt: x\ntests:\n  - id: a\n    expected: {answer: '1'}\n  - id: b\n    expected:\n      type: nope\n")
	for field, want := range map[string]int{
		"system_prompt":          1,
		"tests":                  2,
		"tests[0]":               3,
		"tests[1].id":            5,
		"tests[1].expected.type": 7,
		"tests[1].missing":       5,
		"tests[9].id":            2,
		"nothing":                0,
	} {
		if got := lineOfField(data, field); got != want {
			t.Errorf("%s: line %d, want %d", field, got, want)
		}
	}
}
