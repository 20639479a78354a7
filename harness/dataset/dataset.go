package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// The formats Parse reads.
const (
	JSONL = "jsonl" // JSON Lines: one JSON object per line
	CSV   = "csv"   // comma-separated values with a header
)

// The presets: the layouts of well-known datasets.
const (
	GSM8K = "gsm8k"
	MMLU  = "mmlu"
)

// Default limits of Parse.
const (
	// DefaultMaxBytes is the most data Parse reads: the API's body limit.
	DefaultMaxBytes = 64 << 20
	// DefaultMaxRows is the most rows Parse reads.
	DefaultMaxRows = 100_000
)

// ErrTooLarge reports data over Options.MaxBytes or Options.MaxRows.
var ErrTooLarge = errors.New("dataset too large")

// Mapping names the columns a test is read from. An empty field means the
// default columns (see the package documentation).
type Mapping struct {
	Prompt string `json:"prompt,omitempty"`
	Answer string `json:"answer,omitempty"`
	Type   string `json:"type,omitempty"`
	ID     string `json:"id,omitempty"`
}

// Options say how to read a dataset and where its tests go.
type Options struct {
	// Format is JSONL or CSV. Required.
	Format string
	// Preset is "", GSM8K or MMLU.
	Preset string
	// Mapping renames the columns read.
	Mapping Mapping
	// Delimiter separates CSV fields: one character, "," when empty;
	// "tab" and `\t` mean a tab.
	Delimiter string
	// Type is the expected answer type of rows without a type column;
	// empty means "exact". A preset fixes the type instead.
	Type string
	// DomainID and Level say where the tests go.
	DomainID string
	Level    int
	// Validator checks each test as the catalog will: give the catalog's
	// (catalog.Catalog.Validator), so that the known expected types and
	// the domain are the catalog's. The zero value knows the built-in
	// types and checks no references.
	Validator harness.Validator
	// MaxBytes and MaxRows bound the input; zero means DefaultMaxBytes and
	// DefaultMaxRows.
	MaxBytes int64
	MaxRows  int
	// SkipInvalid makes Import write the valid rows when some are refused.
	// Parse ignores it.
	SkipInvalid bool
}

// RowError is a row that did not become a test.
type RowError struct {
	// Row is the row's number among the data rows, from 1 (see the
	// package documentation); 0 for an error about no particular row.
	Row int `json:"row"`
	// Line is the line of the file where the row starts, from 1.
	Line int `json:"line"`
	// Column names the column at fault, when one is.
	Column string `json:"column,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
}

// Error returns `row 7: column "answer": missing`.
func (e RowError) Error() string {
	var b strings.Builder
	if e.Row > 0 {
		fmt.Fprintf(&b, "row %d: ", e.Row)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, "column %q: ", e.Column)
	}
	b.WriteString(e.Message)
	return b.String()
}

// Row is a row that became a test.
type Row struct {
	Row  int // as in RowError
	Line int
	Test harness.Test
}

// Result is what Parse read: the tests, in the order of the data, and the
// rows that were refused, in the same order.
type Result struct {
	Rows   []Row
	Errors []RowError
	// Total counts the data rows read, refused ones included.
	Total int
}

// Tests returns the tests of the accepted rows.
func (r *Result) Tests() []harness.Test {
	out := make([]harness.Test, len(r.Rows))
	for i, row := range r.Rows {
		out[i] = row.Test
	}
	return out
}

// record is one row as read: a value per column, and the column names in
// the source for error messages.
type record struct {
	row, line int
	get       func(col string) (string, bool, error) // value, present, error
	// raw is a column's value as JSON (a JSON row's value, a CSV
	// field's text), for the conversation columns; present is false when
	// the column is absent or null.
	raw func(col string) (json.RawMessage, bool)
	// choices is the MMLU choices of a JSON row, when the key is there.
	choices func() ([]string, error)
}

// parser holds the options resolved for one Parse.
type parser struct {
	opts    Options
	prompt  []string // candidate columns, first present wins
	answer  []string
	typ     []string
	id      []string
	fixType string // the preset's type
	res     *Result
	seen    map[string]int // test id → row
}

// Parse reads a dataset from r and returns its tests and the rows it
// refused. Its error is about the whole input: options that do not make
// sense, a CSV header without the needed columns, or too much data.
func Parse(r io.Reader, opts Options) (*Result, error) {
	p, err := newParser(opts)
	if err != nil {
		return nil, err
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read dataset: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if opts.Format == JSONL {
		err = p.jsonl(data)
	} else {
		err = p.csv(data)
	}
	if err != nil {
		return nil, err
	}
	if p.res.Total == 0 {
		return nil, harness.Invalid("data", "has no rows")
	}
	return p.res, nil
}

func newParser(opts Options) (*parser, error) {
	ve := &harness.ValidationError{}
	if opts.Format != JSONL && opts.Format != CSV {
		ve.Add("format", "must be jsonl or csv")
	}
	switch {
	case opts.DomainID == "":
		ve.Add("domain_id", "is required")
	case !harness.ValidID(opts.DomainID):
		ve.Add("domain_id", "must match ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
	case opts.Validator.Refs != nil && !opts.Validator.Refs.HasDomain(opts.DomainID):
		ve.Add("domain_id", "unknown domain %q", opts.DomainID)
	}
	if opts.Level < 0 || opts.Level > harness.MaxLevel {
		ve.Add("level", "must be between 0 and %d", harness.MaxLevel)
	}
	if opts.Delimiter != "" && opts.Format == JSONL {
		ve.Add("delimiter", "applies to csv only")
	} else if _, err := delimiter(opts.Delimiter); err != nil {
		ve.Add("delimiter", "%v", err)
	}
	m := opts.Mapping
	for field, col := range map[string]string{"prompt": m.Prompt, "answer": m.Answer, "type": m.Type, "id": m.ID} {
		if col != "" && strings.TrimSpace(col) == "" {
			ve.Add("mapping."+field, "is blank")
		}
	}
	p := &parser{
		opts: opts, res: &Result{}, seen: map[string]int{},
		prompt: pick(m.Prompt, "prompt", "input", "question"),
		answer: pick(m.Answer, "answer", "target"),
		typ:    pick(m.Type, "type"),
		id:     pick(m.ID, "id"),
	}
	switch opts.Preset {
	case "":
	case GSM8K, MMLU:
		p.prompt, p.answer = pick(m.Prompt, "question"), pick(m.Answer, "answer")
		p.typ = nil
		p.fixType = "numeric"
		if opts.Preset == MMLU {
			p.fixType = "choice"
		}
		if m.Type != "" {
			ve.Add("mapping.type", "a preset fixes the type (%s)", p.fixType)
		}
		if opts.Type != "" {
			ve.Add("type", "a preset fixes the type (%s)", p.fixType)
		}
		if opts.Preset == MMLU && opts.Format == CSV && m != (Mapping{}) {
			ve.Add("mapping", "MMLU CSV has no header: its columns are question,A,B,C,D,answer")
		}
		if opts.Preset == GSM8K && opts.Format == CSV {
			ve.Add("format", "the gsm8k preset reads jsonl")
		}
	default:
		ve.Add("preset", "must be gsm8k or mmlu")
	}
	if opts.Type != "" {
		reg := opts.Validator.Registry
		if reg == nil {
			reg = harness.NewRegistry()
		}
		if _, ok := reg.ExpectedType(opts.Type); !ok {
			ve.Add("type", "unknown expected type %q", opts.Type)
		}
	}
	if err := ve.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

func pick(mapped string, defaults ...string) []string {
	if mapped != "" {
		return []string{mapped}
	}
	return defaults
}

// delimiter returns the CSV delimiter d names.
func delimiter(d string) (rune, error) {
	switch d {
	case "":
		return ',', nil
	case "tab", `\t`:
		return '\t', nil
	}
	r, n := utf8.DecodeRuneInString(d)
	switch {
	case n != len(d) || r == utf8.RuneError:
		return 0, errors.New(`must be one character, such as ";" or "tab"`)
	case r == '"' || r == '\r' || r == '\n' || r == '\uFEFF':
		return 0, fmt.Errorf("%q cannot separate fields", d)
	}
	return r, nil
}

// first returns the first of cols the record has, its value and name.
func first(rec *record, cols []string) (val, col string, present bool, err error) {
	for _, c := range cols {
		v, ok, err := rec.get(c)
		if err != nil {
			return "", c, true, err
		}
		if ok {
			return v, c, true, nil
		}
	}
	if len(cols) > 0 {
		col = cols[0]
	}
	return "", col, false, nil
}

// row turns a record into a test, or row errors.
func (p *parser) row(rec *record) {
	p.res.Total++
	fail := func(col, format string, args ...any) {
		p.res.Errors = append(p.res.Errors, RowError{Row: rec.row, Line: rec.line, Column: col, Message: fmt.Sprintf(format, args...)})
	}
	if p.opts.Preset == "" {
		typ, _, _, _ := first(rec, p.typ)
		if typ = strings.TrimSpace(typ); typ == "" {
			typ = p.opts.Type
		}
		if turns, col, ok, err := p.conversation(rec, typ); ok {
			if err != nil {
				fail(col, "%v", err)
				return
			}
			p.conversationRow(rec, turns, col, fail)
			return
		}
	}
	prompt, promptCol, ok, err := first(rec, p.prompt)
	switch {
	case err != nil:
		fail(promptCol, "%v", err)
		return
	case !ok:
		fail(promptCol, "missing")
		return
	case strings.TrimSpace(prompt) == "":
		fail(promptCol, "is empty")
		return
	}
	var choices []string
	if p.opts.Preset == MMLU {
		if choices, err = rec.choices(); err != nil {
			fail("choices", "%v", err)
			return
		}
	}
	answer, answerCol, ok, err := first(rec, p.answer)
	switch {
	case err != nil:
		fail(answerCol, "%v", err)
		return
	case !ok:
		fail(answerCol, "missing")
		return
	}
	answer = strings.TrimSpace(answer)
	typ, typeCol := p.fixType, ""
	switch p.opts.Preset {
	case GSM8K:
		i := strings.LastIndex(answer, "####")
		if i < 0 {
			fail(answerCol, `has no "####" before the final answer`)
			return
		}
		answer = strings.ReplaceAll(strings.TrimSpace(answer[i+4:]), ",", "")
	case MMLU:
		letter, err := choiceLetter(answer)
		if err != nil {
			fail(answerCol, "%v", err)
			return
		}
		var b strings.Builder
		b.WriteString(strings.TrimRight(prompt, " \t\r\n"))
		b.WriteString("\n")
		for i, c := range choices {
			fmt.Fprintf(&b, "\n%c. %s", 'A'+i, strings.TrimSpace(c))
		}
		prompt, answer = b.String(), letter
	default:
		var t string
		t, typeCol, ok, err = first(rec, p.typ)
		if err != nil {
			fail(typeCol, "%v", err)
			return
		}
		typ = strings.TrimSpace(t)
		if !ok || typ == "" {
			typ = p.opts.Type
		}
	}
	if answer == "" {
		fail(answerCol, "is empty")
		return
	}
	t := harness.Test{DomainID: p.opts.DomainID, Level: p.opts.Level, Prompt: prompt,
		Expected: harness.Expected{Answer: answer, Type: typ}}
	p.addTest(rec, t, "same prompt and answer", fail, func(f harness.FieldError, idCol string) {
		col := ""
		switch {
		case f.Field == "prompt":
			col = promptCol
		case f.Field == "id":
			col = idCol
		case f.Field == "expected.type":
			col = typeCol
		case strings.HasPrefix(f.Field, "expected"):
			col = answerCol
		}
		msg := f.Message
		if col == "" && f.Field != "" {
			msg = f.Field + ": " + msg
		}
		fail(col, "%s", msg)
	})
}

// addTest adds a row's test t, every row kind alike: its id is the row's
// id column, else one made from its content (same names what a made id
// repeating an earlier row's means, "same prompt and answer"); it is
// checked by the validator, each field's error reported by field with
// the id column ("" for a made id); and a test whose id an earlier row
// took is refused. fail reports a row error.
func (p *parser) addTest(rec *record, t harness.Test, same string, fail func(col, format string, args ...any),
	field func(f harness.FieldError, idCol string)) {
	id, idCol, ok, err := first(rec, p.id)
	switch {
	case err != nil:
		fail(idCol, "%v", err)
		return
	case ok && strings.TrimSpace(id) != "":
		t.ID = strings.TrimSpace(id)
		if !harness.ValidID(t.ID) {
			fail(idCol, "%q is not a valid test id (^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$)", truncate(t.ID))
			return
		}
	default:
		idCol = ""
		t.ID = contentID(t)
	}
	if err := p.opts.Validator.Test(&t); err != nil {
		var ve *harness.ValidationError
		if !errors.As(err, &ve) {
			fail("", "%v", err)
			return
		}
		for _, f := range ve.Fields {
			field(f, idCol)
		}
		return
	}
	if prev, dup := p.seen[t.ID]; dup {
		if idCol != "" {
			fail(idCol, "id %q repeats row %d", t.ID, prev)
		} else {
			fail("", "%s as row %d", same, prev)
		}
		return
	}
	p.seen[t.ID] = rec.row
	p.res.Rows = append(p.res.Rows, Row{Row: rec.row, Line: rec.line, Test: t})
}

// choiceLetter reads an MMLU answer: a letter A-D or an index 0-3.
func choiceLetter(s string) (string, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > 3 {
			return "", fmt.Errorf("index %d is not 0 to 3", n)
		}
		return string(rune('A' + n)), nil
	}
	if l, ok := harness.ParseChoice(s); ok && l <= "D" {
		return l, nil
	}
	return "", fmt.Errorf("%q is not a letter A to D or an index 0 to 3", truncate(s))
}

// contentID is the generated id of a test: stable for the same content at
// the same place.
func contentID(t harness.Test) string {
	h := sha256.New()
	for _, s := range []string{t.DomainID, strconv.Itoa(t.Level), t.Prompt, t.Expected.Answer, t.Expected.Type} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	if t.Turns != nil {
		b, _ := json.Marshal(t.Turns)
		fmt.Fprintf(h, "%d:%s", len(b), b)
	}
	return "d-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// truncate shortens s for an error message.
func truncate(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
