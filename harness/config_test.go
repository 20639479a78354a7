package harness_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// graderConfig is the config of a made-up evaluator type, as a module
// declares it: one documented field per setting, defaults set before
// decoding, required settings and ranges checked by Validate.
type graderConfig struct {
	// Rubric says what a good response does. Required.
	Rubric string `json:"rubric"`
	// PassScore is the score from which a test passes, 0 to 1.
	PassScore float64 `json:"pass_score"`
	// Retries is how many times the grader is asked again.
	Retries int `json:"retries"`
}

func (c *graderConfig) Validate() error {
	ve := &harness.ValidationError{}
	if strings.TrimSpace(c.Rubric) == "" {
		ve.Add("rubric", "is required")
	}
	if !(c.PassScore >= 0 && c.PassScore <= 1) {
		ve.Add("pass_score", "must be between 0 and 1")
	}
	return ve.Err()
}

func ExampleDecodeConfig() {
	// A record's config, as the API or a definitions file gives it.
	record := map[string]any{"rubric": "Cites a source.", "pass_score": 0.8, "retries": 2.0}
	cfg := graderConfig{PassScore: 0.5} // the default, kept when the key is absent
	if err := harness.DecodeConfig(record, &cfg); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", cfg)

	// Every problem at once, each named as the API reports it.
	err := harness.DecodeConfig(map[string]any{"pass_scor": 0.8, "retries": 1.5}, &graderConfig{})
	var ve *harness.ValidationError
	if errors.As(err, &ve) {
		for _, f := range ve.Fields {
			fmt.Println(f)
		}
	}
	// Output:
	// {Rubric:Cites a source. PassScore:0.8 Retries:2}
	// config.rubric: is required
	// config.retries: must be an integer, not 1.5
	// config.pass_scor: unknown setting (did you mean "pass_score"?)
}

type inner struct {
	Host string `json:"host"`
	Port uint16 `json:"port"`
}

type Embedded struct {
	Shared string `json:"shared"`
}

type everything struct {
	Embedded
	S       string            `json:"s"`
	B       bool              `json:"b"`
	I       int               `json:"i"`
	I8      int8              `json:"i8"`
	U       uint              `json:"u"`
	F       float64           `json:"f"`
	F32     float32           `json:"f32"`
	P       *int              `json:"p"`
	List    []string          `json:"list"`
	Matrix  [][]int           `json:"matrix"`
	Pair    [2]int            `json:"pair"`
	Map     map[string]int    `json:"map"`
	Nested  inner             `json:"nested"`
	NestedP *inner            `json:"nested_p"`
	Items   []inner           `json:"items"`
	Any     any               `json:"any"`
	Dur     jsonDuration      `json:"dur"`
	Addr    netip.Addr        `json:"addr"`
	Num     json.Number       `json:"num"`
	Raw     json.RawMessage   `json:"raw"`
	Bytes   []byte            `json:"bytes"`
	Labels  map[string]string `json:"labels"`
	Skipped string            `json:"-"`
	NoTag   string
	//lint:ignore U1000 an unexported field, which DecodeConfig must leave alone
	internal string
}

// jsonDuration decodes itself from "1m30s".
type jsonDuration time.Duration

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("must be a duration such as \"1m30s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("must be a duration such as \"1m30s\"")
	}
	*d = jsonDuration(v)
	return nil
}

func TestDecodeConfigValues(t *testing.T) {
	seven := 7
	cfg := map[string]any{
		"shared":   "promoted",
		"s":        "text",
		"b":        true,
		"i":        json.Number("-12"),
		"i8":       int64(-128),
		"u":        uint64(math.MaxUint32),
		"f":        3, // an int, as a YAML decoder gives it
		"f32":      1.5,
		"p":        7.0,
		"list":     []any{"a", "b"},
		"matrix":   []any{[]any{1.0, 2.0}, []any{}},
		"pair":     []any{1, 2},
		"map":      map[string]any{"x": 1.0},
		"nested":   map[string]any{"host": "h", "port": 8080.0},
		"nested_p": map[string]any{"host": "p"},
		"items":    []any{map[string]any{"host": "i"}},
		"any":      map[string]any{"n": 1, "l": []any{true}},
		"dur":      "1m30s",
		"addr":     "127.0.0.1",
		"num":      2.5,
		"raw":      map[string]any{"k": "v"},
		"bytes":    "aGk=",
		"labels":   map[string]string{"team": "a"}, // a typed map from Go code
		"NoTag":    "by Go name",
	}
	var got everything
	if err := harness.DecodeConfig(cfg, &got); err != nil {
		t.Fatal(err)
	}
	want := everything{
		Embedded: Embedded{Shared: "promoted"},
		S:        "text", B: true, I: -12, I8: -128, U: math.MaxUint32, F: 3, F32: 1.5, P: &seven,
		List: []string{"a", "b"}, Matrix: [][]int{{1, 2}, {}}, Pair: [2]int{1, 2},
		Map: map[string]int{"x": 1}, Nested: inner{"h", 8080}, NestedP: &inner{Host: "p"},
		Items: []inner{{Host: "i"}}, Any: map[string]any{"n": 1.0, "l": []any{true}},
		Dur: jsonDuration(90 * time.Second), Addr: netip.MustParseAddr("127.0.0.1"),
		Num: "2.5", Raw: json.RawMessage(`{"k":"v"}`), Bytes: []byte("hi"),
		Labels: map[string]string{"team": "a"}, NoTag: "by Go name",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestDecodeConfigNullAndAbsent(t *testing.T) {
	p := 3
	got := everything{S: "default", I: 5, P: &p, List: []string{"x"}, Map: map[string]int{"a": 1}, Any: 1}
	err := harness.DecodeConfig(map[string]any{"s": nil, "i": nil, "p": nil, "list": nil, "map": nil, "any": nil}, &got)
	if err != nil {
		t.Fatal(err)
	}
	if got.S != "default" || got.I != 5 {
		t.Errorf("null changed a plain field: %+v", got)
	}
	if got.P != nil || got.List != nil || got.Map != nil || got.Any != nil {
		t.Errorf("null did not clear a pointer, slice, map or interface: %+v", got)
	}
	var nilCfg graderConfig
	err = harness.DecodeConfig(nil, &nilCfg)
	if fields := fieldNames(err); !reflect.DeepEqual(fields, []string{"config.rubric"}) {
		t.Errorf("nil config: %v, want only the required rubric", err)
	}
}

func TestDecodeConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]any
		want []string // "field: message"
	}{
		{"string for a number", map[string]any{"f": "1.5"}, []string{"config.f: must be a number, not a string"}},
		{"number for a string", map[string]any{"s": 3}, []string{"config.s: must be a string, not a number"}},
		{"json.Number for a string", map[string]any{"s": json.Number("3")}, []string{"config.s: must be a string, not a number"}},
		{"string for a boolean", map[string]any{"b": "yes"}, []string{"config.b: must be true or false, not a string"}},
		{"fraction for an int", map[string]any{"i": 1.5}, []string{"config.i: must be an integer, not 1.5"}},
		{"fraction as json.Number", map[string]any{"i": json.Number("2.25")}, []string{"config.i: must be an integer, not 2.25"}},
		{"integral float for an int", map[string]any{"i": 1e3}, nil},
		{"int8 overflow", map[string]any{"i8": 200}, []string{"config.i8: must be an integer from -128 to 127"}},
		{"negative for a uint", map[string]any{"u": -1}, []string{"config.u: must be an integer from 0 to 18446744073709551615"}},
		{"huge float for an int", map[string]any{"i": 1e30}, []string{"config.i: must be an integer from -9223372036854775808 to 9223372036854775807"}},
		{"NaN for an int", map[string]any{"i": math.NaN()}, []string{"config.i: must be an integer, not NaN"}},
		{"float32 overflow", map[string]any{"f32": 1e300}, []string{"config.f32: is out of range"}},
		{"json.Number overflow", map[string]any{"f": json.Number("1e999")}, []string{"config.f: is out of range"}},
		{"list for a string", map[string]any{"s": []any{"a"}}, []string{"config.s: must be a string, not a list"}},
		{"string for a list", map[string]any{"list": "a,b"}, []string{"config.list: must be a list, not a string"}},
		{"bad list item", map[string]any{"list": []any{"a", "b", 3}}, []string{"config.list[2]: must be a string, not a number"}},
		{"bad nested list item", map[string]any{"matrix": []any{[]any{1}, []any{1, "x"}}}, []string{"config.matrix[1][1]: must be an integer, not a string"}},
		{"array too long", map[string]any{"pair": []any{1, 2, 3}}, []string{"config.pair: must have at most 2 items, not 3"}},
		{"object for a string", map[string]any{"s": map[string]any{}}, []string{"config.s: must be a string, not an object"}},
		{"string for an object", map[string]any{"nested": "h:80"}, []string{"config.nested: must be an object, not a string"}},
		{"bad nested value", map[string]any{"nested": map[string]any{"port": 70000}}, []string{"config.nested.port: must be an integer from 0 to 65535"}},
		{"unknown nested key", map[string]any{"nested": map[string]any{"hots": "h"}}, []string{`config.nested.hots: unknown setting (did you mean "host"?)`}},
		{"bad map value", map[string]any{"map": map[string]any{"a": 1, "b": "2"}}, []string{"config.map.b: must be an integer, not a string"}},
		{"bad item in a list of objects", map[string]any{"items": []any{map[string]any{}, map[string]any{"port": true}}}, []string{"config.items[1].port: must be an integer, not a boolean"}},
		{"own UnmarshalJSON", map[string]any{"dur": "soon"}, []string{`config.dur: must be a duration such as "1m30s"`}},
		{"own UnmarshalText", map[string]any{"addr": "nowhere"}, []string{`config.addr: ParseAddr("nowhere"): unable to parse IP`}},
		{"number for UnmarshalText", map[string]any{"addr": 1}, []string{"config.addr: must be a string, not a number"}},
		{"bad base64", map[string]any{"bytes": "!!"}, []string{"config.bytes: must be base64 text"}},
		{"unknown key, case", map[string]any{"S": "x"}, []string{`config.S: unknown setting (did you mean "s"?)`}},
		{"unknown key, typo", map[string]any{"nested_q": 1}, []string{`config.nested_q: unknown setting (did you mean "nested_p"?)`}},
		{"unknown key, part", map[string]any{"nest": 1}, []string{`config.nest: unknown setting (did you mean "nested"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dst everything
			err := harness.DecodeConfig(tt.cfg, &dst)
			var got []string
			var ve *harness.ValidationError
			switch {
			case errors.As(err, &ve):
				for _, f := range ve.Fields {
					got = append(got, f.Error())
				}
				if !errors.Is(err, harness.ErrInvalid) {
					t.Error("the error does not match ErrInvalid")
				}
			case err != nil:
				t.Fatalf("%v is not a *ValidationError", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDecodeConfigUnknownKeyLists(t *testing.T) {
	err := harness.DecodeConfig(map[string]any{"zzzzzzzz": 1}, &graderConfig{Rubric: "r"})
	if got := err.Error(); got != "invalid: config.zzzzzzzz: unknown setting (known: pass_score, retries, rubric)" {
		t.Errorf("got %q", got)
	}
	// json:"-", unexported and embedded-struct fields take no key.
	var hidden struct {
		Embedded
		Skipped  string `json:"-"`
		internal string
	}
	err = harness.DecodeConfig(map[string]any{"Skipped": 1, "internal": 2, "Embedded": 3}, &hidden)
	if got := err.Error(); got != "invalid: config.Embedded: unknown setting (known: shared); "+
		"config.Skipped: unknown setting (known: shared); config.internal: unknown setting (known: shared)" {
		t.Errorf("got %q", got)
	}
	_ = hidden.internal
	err = harness.DecodeConfig(map[string]any{"b": 1, "a": 2}, &struct{}{})
	if got := err.Error(); got != "invalid: config.a: unknown setting: there are no settings; config.b: unknown setting: there are no settings" {
		t.Errorf("got %q", got)
	}
}

// Validate's errors join the decode errors under "config", in the order
// of the fields; a field that failed to decode gets no second error.
func TestDecodeConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]any
		want []string
	}{
		{"valid", map[string]any{"rubric": "r"}, nil},
		{"required", map[string]any{}, []string{"config.rubric: is required"}},
		{"wrong type, not also required", map[string]any{"rubric": 3}, []string{"config.rubric: must be a string, not a number"}},
		{"all at once, in field order", map[string]any{"zz": 1, "retries": "2", "pass_score": 9, "rubric": ""},
			[]string{
				"config.rubric: is required",
				"config.pass_score: must be between 0 and 1",
				"config.retries: must be an integer, not a string",
				"config.zz: unknown setting (known: pass_score, retries, rubric)",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			var ve *harness.ValidationError
			if err := harness.DecodeConfig(tt.cfg, &graderConfig{}); errors.As(err, &ve) {
				for _, f := range ve.Fields {
					got = append(got, f.Error())
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

type plainErrConfig struct {
	A int `json:"a"`
}

func (plainErrConfig) Validate() error { return errors.New("a must be even") }

type nestedValidateConfig struct {
	Items []string `json:"items"`
}

func (c nestedValidateConfig) Validate() error {
	ve := &harness.ValidationError{}
	for i, it := range c.Items {
		if it == "" {
			ve.Add(fmt.Sprintf("items[%d]", i), "must not be empty")
		}
	}
	if len(c.Items) > 2 {
		ve.Add("", "has too many items")
	}
	return ve.Err()
}

func TestDecodeConfigValidateNames(t *testing.T) {
	err := harness.DecodeConfig(map[string]any{}, &plainErrConfig{})
	if got := fieldNames(err); !reflect.DeepEqual(got, []string{"config"}) || !strings.Contains(err.Error(), "a must be even") {
		t.Errorf("plain Validate error: %v", err)
	}
	// A value receiver works through the pointer; names are put under
	// config, "" being the config itself.
	err = harness.DecodeConfig(map[string]any{"items": []any{"a", "", "c"}}, &nestedValidateConfig{})
	if got := fieldNames(err); !reflect.DeepEqual(got, []string{"config", "config.items[1]"}) {
		t.Errorf("fields = %q (%v)", got, err)
	}
	// A list that failed to decode gets no errors on its items.
	err = harness.DecodeConfig(map[string]any{"items": []any{"a", 1}}, &nestedValidateConfig{})
	if got := fieldNames(err); !reflect.DeepEqual(got, []string{"config.items[1]"}) {
		t.Errorf("fields = %q (%v)", got, err)
	}
}

func TestConfigDecoderIgnoreUnknown(t *testing.T) {
	cfg := map[string]any{"rubric": "r", "from_a_newer_version": true, "retries": 1}
	var got graderConfig
	if err := (harness.ConfigDecoder{IgnoreUnknown: true}).Decode(cfg, &got); err != nil {
		t.Fatal(err)
	}
	if got.Rubric != "r" || got.Retries != 1 {
		t.Errorf("got %+v", got)
	}
	// Type errors and Validate still count.
	err := (harness.ConfigDecoder{IgnoreUnknown: true}).Decode(map[string]any{"x": 1, "retries": "1"}, &graderConfig{})
	if got := fieldNames(err); !reflect.DeepEqual(got, []string{"config.rubric", "config.retries"}) {
		t.Errorf("fields = %q (%v)", got, err)
	}
}

func TestDecodeConfigCallerMistakes(t *testing.T) {
	var notPointer graderConfig
	var nilPointer *graderConfig
	for _, dst := range []any{notPointer, nilPointer, nil} {
		err := harness.DecodeConfig(map[string]any{}, dst)
		if err == nil || errors.Is(err, harness.ErrInvalid) {
			t.Errorf("DecodeConfig(%T) = %v, want a caller error", dst, err)
		}
	}
	// A field of a type no config can hold.
	var odd struct {
		C chan int    `json:"c"`
		M map[int]int `json:"m"`
		E error       `json:"e"`
	}
	err := harness.DecodeConfig(map[string]any{"c": 1, "m": map[string]any{}, "e": "x"}, &odd)
	if got := fieldNames(err); !reflect.DeepEqual(got, []string{"config.c", "config.m", "config.e"}) {
		t.Errorf("fields = %q (%v)", got, err)
	}
}

// A map built in Go that holds itself is cut at a depth, not followed
// forever.
func TestDecodeConfigDepth(t *testing.T) {
	loop := map[string]any{}
	loop["any"] = loop
	var dst struct {
		Deep map[string]any `json:"deep"`
	}
	err := harness.DecodeConfig(map[string]any{"deep": loop}, &dst)
	if err == nil {
		t.Fatal("a self-referencing map decoded")
	}
	type node struct {
		Next *node `json:"next"`
	}
	var n node
	err = harness.DecodeConfig(map[string]any{"next": loop2()}, &n)
	if got := fieldNames(err); len(got) != 1 || !strings.HasPrefix(got[0], "config.next.next.next") {
		t.Errorf("fields = %q", got)
	}
}

func loop2() map[string]any {
	m := map[string]any{}
	m["next"] = m
	return m
}

// A struct value put in a config from Go code decodes as its JSON form.
func TestDecodeConfigStructValue(t *testing.T) {
	var dst struct {
		Nested inner `json:"nested"`
	}
	if err := harness.DecodeConfig(map[string]any{"nested": inner{Host: "h", Port: 1}}, &dst); err != nil {
		t.Fatal(err)
	}
	if dst.Nested != (inner{"h", 1}) {
		t.Errorf("got %+v", dst.Nested)
	}
}

func fieldNames(err error) []string {
	var ve *harness.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var out []string
	for _, f := range ve.Fields {
		out = append(out, f.Field)
	}
	return out
}

type hiddenBase struct {
	Level int `json:"level"`
}

// Embedded structs promote their fields, as in encoding/json, through an
// exported pointer (allocated when set) or an unexported value; an
// unexported pointer cannot be allocated and promotes nothing.
func TestDecodeConfigEmbedded(t *testing.T) {
	var dst struct {
		*Embedded
		hiddenBase
		Own string `json:"own"`
	}
	err := harness.DecodeConfig(map[string]any{"shared": "s", "level": 3, "own": "o"}, &dst)
	if err != nil {
		t.Fatal(err)
	}
	if dst.Embedded == nil || dst.Shared != "s" || dst.Level != 3 || dst.Own != "o" {
		t.Errorf("got %+v", dst)
	}
	var hidden struct {
		*hiddenBase
		Own string `json:"own"`
	}
	err = harness.DecodeConfig(map[string]any{"level": 3}, &hidden)
	if got := fieldNames(err); !reflect.DeepEqual(got, []string{"config.level"}) {
		t.Errorf("fields = %q (%v)", got, err)
	}
	// A field of the outer struct hides a promoted one of the same name.
	var shadow struct {
		Embedded
		Shared int `json:"shared"`
	}
	if err := harness.DecodeConfig(map[string]any{"shared": 2}, &shadow); err != nil || shadow.Shared != 2 {
		t.Errorf("shadowing: %+v, %v", shadow, err)
	}
}
