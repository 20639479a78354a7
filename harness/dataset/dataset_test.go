package dataset_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/dataset"
)

type refs map[string]bool

func (r refs) HasDomain(id string) bool { return r[id] }
func (refs) HasEvaluator(string) bool   { return false }
func (refs) HasTool(string) bool        { return false }

func opts(format string) dataset.Options {
	return dataset.Options{Format: format, DomainID: "math", Level: 2,
		Validator: harness.Validator{Refs: refs{"math": true}}}
}

func parse(t *testing.T, data string, o dataset.Options) *dataset.Result {
	t.Helper()
	res, err := dataset.Parse(strings.NewReader(data), o)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return res
}

func errorTexts(res *dataset.Result) []string {
	out := make([]string, len(res.Errors))
	for i, e := range res.Errors {
		out[i] = e.Error()
	}
	return out
}

func TestParseRows(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   string
		opts   func(*dataset.Options)
		format string
		want   []harness.Test // ID checked only when set
		errs   []string
	}{
		{name: "jsonl default columns", format: dataset.JSONL,
			data: "{\"prompt\":\"2+2?\",\"answer\":4,\"type\":\"numeric\",\"id\":\"a1\"}\n\n{\"input\":\"Capital of France?\",\"target\":\"Paris\"}\r\n",
			want: []harness.Test{
				{ID: "a1", Prompt: "2+2?", Expected: harness.Expected{Answer: "4", Type: "numeric"}},
				{Prompt: "Capital of France?", Expected: harness.Expected{Answer: "Paris", Type: "exact"}},
			}},
		{name: "jsonl question column", format: dataset.JSONL,
			data: `{"question":"Yes?","answer":true,"type":"boolean"}`,
			want: []harness.Test{{Prompt: "Yes?", Expected: harness.Expected{Answer: "true", Type: "boolean"}}}},
		{name: "jsonl mapping and default type", format: dataset.JSONL,
			opts: func(o *dataset.Options) {
				o.Mapping = dataset.Mapping{Prompt: "q", Answer: "a", ID: "key"}
				o.Type = "numeric"
			},
			data: `{"q":"1+1?","a":"2","key":"k1"}`,
			want: []harness.Test{{ID: "k1", Prompt: "1+1?", Expected: harness.Expected{Answer: "2", Type: "numeric"}}}},
		{name: "jsonl row errors", format: dataset.JSONL,
			data: "{\"prompt\":\"p\"}\nnot json\n[1]\n{\"prompt\":\" \",\"answer\":\"x\"}\n{\"prompt\":\"p\",\"answer\":\"x\",\"type\":\"numeric\"}\n" +
				"{\"prompt\":\"p\",\"answer\":\"x\",\"type\":\"nope\"}\n{\"prompt\":{},\"answer\":\"x\"}\n{\"prompt\":\"p\",\"answer\":\"x\",\"id\":\"bad id\"}\n" +
				"{\"prompt\":\"p\",\"answer\":\"x\"}\n{\"prompt\":\"p\",\"answer\":\"x\"}\n",
			want: []harness.Test{{Prompt: "p", Expected: harness.Expected{Answer: "x", Type: "exact"}}},
			errs: []string{
				`row 1: column "answer": missing`,
				`row 2: not valid JSON: invalid character 'o' in literal null (expecting 'u')`,
				`row 3: not a JSON object`,
				`row 4: column "prompt": is empty`,
				`row 5: column "answer": "x" is not a number`,
				`row 6: column "type": unknown expected type "nope" (known: boolean, choice, contains, exact, integer, json, numeric, regex, tool_call)`,
				`row 7: column "prompt": must be text or a number, not an object or a list`,
				`row 8: column "id": "bad id" is not a valid test id (^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$)`,
				`row 10: same prompt and answer as row 9`,
			}},
		{name: "csv with BOM, quoted newlines and case-insensitive header", format: dataset.CSV,
			data: "\uFEFFId,Question,Answer,Type\nq1,\"Line one\nline two, with a comma\",42,numeric\nq2,\"Say \"\"hi\"\"\",hi,\n",
			want: []harness.Test{
				{ID: "q1", Prompt: "Line one\nline two, with a comma", Expected: harness.Expected{Answer: "42", Type: "numeric"}},
				{ID: "q2", Prompt: `Say "hi"`, Expected: harness.Expected{Answer: "hi", Type: "exact"}},
			}},
		{name: "csv semicolon", format: dataset.CSV, opts: func(o *dataset.Options) { o.Delimiter = ";" },
			data: "prompt;answer\n\"a;b\";1,5\n",
			want: []harness.Test{{Prompt: "a;b", Expected: harness.Expected{Answer: "1,5", Type: "exact"}}}},
		{name: "csv tab", format: dataset.CSV, opts: func(o *dataset.Options) { o.Delimiter = "tab" },
			data: "input\ttarget\nhello\tworld\n",
			want: []harness.Test{{Prompt: "hello", Expected: harness.Expected{Answer: "world", Type: "exact"}}}},
		{name: "csv row errors and lines", format: dataset.CSV,
			data: "prompt,answer\n\"multi\nline\",\nshort\nok,1\nbad \"quote,2\n",
			want: []harness.Test{{Prompt: "ok", Expected: harness.Expected{Answer: "1", Type: "exact"}}},
			errs: []string{
				`row 1: column "answer": is empty`,
				`row 2: column "answer": missing`,
				`row 4: not valid CSV: bare " in non-quoted-field`,
			}},
		{name: "gsm8k", format: dataset.JSONL, opts: func(o *dataset.Options) { o.Preset = dataset.GSM8K },
			data: `{"question":"Tom has 1,000 apples and buys 200 more. How many?","answer":"1000 + 200 = <<1000+200=1200>>1200\n#### 1,200"}` + "\n" +
				`{"question":"No final line","answer":"42"}`,
			want: []harness.Test{{Prompt: "Tom has 1,000 apples and buys 200 more. How many?", Expected: harness.Expected{Answer: "1200", Type: "numeric"}}},
			errs: []string{`row 2: column "answer": has no "####" before the final answer`}},
		{name: "mmlu jsonl", format: dataset.JSONL, opts: func(o *dataset.Options) { o.Preset = dataset.MMLU },
			data: `{"question":"2+2?","choices":["3","4","5",6],"answer":1,"subject":"math"}` + "\n" +
				`{"question":"Pick C","choices":["a","b","c","d"],"answer":"c"}` + "\n" +
				`{"question":"Three","choices":["a","b","c"],"answer":"A"}` + "\n" +
				`{"question":"Out","choices":["a","b","c","d"],"answer":4}`,
			want: []harness.Test{
				{Prompt: "2+2?\n\nA. 3\nB. 4\nC. 5\nD. 6", Expected: harness.Expected{Answer: "B", Type: "choice"}},
				{Prompt: "Pick C\n\nA. a\nB. b\nC. c\nD. d", Expected: harness.Expected{Answer: "C", Type: "choice"}},
			},
			errs: []string{`row 3: column "choices": has 3 items, want 4 (A to D)`, `row 4: column "answer": index 4 is not 0 to 3`}},
		{name: "mmlu csv without header", format: dataset.CSV, opts: func(o *dataset.Options) { o.Preset = dataset.MMLU },
			data: "\"Which, of these?\",w,x,y,z,D\nShort,a,b\n",
			want: []harness.Test{{Prompt: "Which, of these?\n\nA. w\nB. x\nC. y\nD. z", Expected: harness.Expected{Answer: "D", Type: "choice"}}},
			errs: []string{`row 2: column "choices": the record has 3 fields, want 6: question,A,B,C,D,answer`}},
		{name: "mmlu csv with a header", format: dataset.CSV, opts: func(o *dataset.Options) { o.Preset = dataset.MMLU },
			data: "question,A,B,C,D,answer\nQ,a,b,c,d,A\n",
			want: []harness.Test{{Prompt: "Q\n\nA. a\nB. b\nC. c\nD. d", Expected: harness.Expected{Answer: "A", Type: "choice"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(tc.format)
			if tc.opts != nil {
				tc.opts(&o)
			}
			res := parse(t, tc.data, o)
			if got := errorTexts(res); strings.Join(got, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.errs, "\n"))
			}
			if len(res.Rows) != len(tc.want) {
				t.Fatalf("%d tests, want %d: %+v", len(res.Rows), len(tc.want), res.Rows)
			}
			for i, w := range tc.want {
				g := res.Rows[i].Test
				if (w.ID != "" && g.ID != w.ID) || !harness.ValidID(g.ID) || g.Prompt != w.Prompt || g.Expected.Answer != w.Expected.Answer ||
					g.Expected.Type != w.Expected.Type || g.DomainID != "math" || g.Level != 2 {
					t.Errorf("test %d: %+v, want %+v", i, g, w)
				}
			}
			if res.Total != len(tc.want)+len(tc.errs) {
				t.Errorf("total %d, want %d", res.Total, len(tc.want)+len(tc.errs))
			}
		})
	}
}

func TestRowLines(t *testing.T) {
	res := parse(t, "prompt,answer\n\"a\nb\",\nc,\n", opts(dataset.CSV))
	if len(res.Errors) != 2 || res.Errors[0].Line != 2 || res.Errors[1].Line != 4 || res.Errors[1].Row != 2 {
		t.Fatalf("errors %+v", res.Errors)
	}
	res = parse(t, "\n{\"prompt\":\"x\"}\n", opts(dataset.JSONL))
	if len(res.Errors) != 1 || res.Errors[0].Line != 2 || res.Errors[0].Row != 1 {
		t.Fatalf("errors %+v", res.Errors)
	}
}

func TestGeneratedIDsAreStable(t *testing.T) {
	data := `{"prompt":"p","answer":"1"}` + "\n" + `{"prompt":"q","answer":"1"}`
	a, b := parse(t, data, opts(dataset.JSONL)), parse(t, data, opts(dataset.JSONL))
	if a.Rows[0].Test.ID != b.Rows[0].Test.ID || a.Rows[0].Test.ID == a.Rows[1].Test.ID {
		t.Fatalf("ids %s %s %s", a.Rows[0].Test.ID, b.Rows[0].Test.ID, a.Rows[1].Test.ID)
	}
	o := opts(dataset.JSONL)
	o.Level = 3
	if c := parse(t, data, o); c.Rows[0].Test.ID == a.Rows[0].Test.ID {
		t.Fatal("the same row at another level has the same id")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		data  string
		opts  func(*dataset.Options)
		field string
		large bool
	}{
		{name: "bad format", opts: func(o *dataset.Options) { o.Format = "xml" }, field: "format"},
		{name: "bad preset", opts: func(o *dataset.Options) { o.Preset = "squad" }, field: "preset"},
		{name: "unknown domain", opts: func(o *dataset.Options) { o.DomainID = "nope" }, field: "domain_id"},
		{name: "bad level", opts: func(o *dataset.Options) { o.Level = -1 }, field: "level"},
		{name: "long delimiter", opts: func(o *dataset.Options) { o.Format, o.Delimiter = dataset.CSV, ";;" }, field: "delimiter"},
		{name: "quote delimiter", opts: func(o *dataset.Options) { o.Format, o.Delimiter = dataset.CSV, `"` }, field: "delimiter"},
		{name: "delimiter with jsonl", opts: func(o *dataset.Options) { o.Delimiter = ";" }, field: "delimiter"},
		{name: "unknown default type", opts: func(o *dataset.Options) { o.Type = "fuzzy" }, field: "type"},
		{name: "type with a preset", opts: func(o *dataset.Options) { o.Preset, o.Mapping.Type = dataset.GSM8K, "t" }, field: "mapping.type"},
		{name: "gsm8k csv", opts: func(o *dataset.Options) { o.Format, o.Preset = dataset.CSV, dataset.GSM8K }, field: "format"},
		{name: "csv header without prompt", data: "q,answer\nx,1\n", opts: func(o *dataset.Options) { o.Format = dataset.CSV }, field: "mapping.prompt"},
		{name: "csv mapping names no column", data: "prompt,answer\nx,1\n",
			opts: func(o *dataset.Options) { o.Format, o.Mapping.Answer = dataset.CSV, "target" }, field: "mapping.answer"},
		{name: "no rows", data: "\n\n", field: "data"},
		{name: "header only", data: "prompt,answer\n", opts: func(o *dataset.Options) { o.Format = dataset.CSV }, field: "data"},
		{name: "too many bytes", data: strings.Repeat("x", 101), opts: func(o *dataset.Options) { o.MaxBytes = 100 }, large: true},
		{name: "too many rows", data: strings.Repeat(`{"prompt":"p","answer":"a"}`+"\n", 3), opts: func(o *dataset.Options) { o.MaxRows = 2 }, large: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(dataset.JSONL)
			if tc.opts != nil {
				tc.opts(&o)
			}
			data := tc.data
			if data == "" {
				data = `{"prompt":"p","answer":"a"}`
			}
			_, err := dataset.Parse(strings.NewReader(data), o)
			if tc.large {
				if !errors.Is(err, dataset.ErrTooLarge) {
					t.Fatalf("err %v, want ErrTooLarge", err)
				}
				return
			}
			var ve *harness.ValidationError
			if !errors.As(err, &ve) || ve.Fields[0].Field != tc.field {
				t.Fatalf("err %v, want a validation error of %s", err, tc.field)
			}
		})
	}
}

func TestRowErrorText(t *testing.T) {
	if got := (dataset.RowError{Row: 7, Column: "answer", Message: "missing"}).Error(); got != `row 7: column "answer": missing` {
		t.Fatal(got)
	}
}
