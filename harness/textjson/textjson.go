package textjson

import (
	"encoding/json"
	"errors"
	"io"
	"iter"
	"strings"
	"unicode"
)

// Source says where Find found a JSON value.
type Source string

// The places a JSON value is looked for, in the order Find tries them.
const (
	// Whole: the whole text, trimmed of white space, is one JSON value.
	Whole Source = "whole"
	// Fence: the body of a ``` fenced code block.
	Fence Source = "fence"
	// Embedded: an object or array amid other text.
	Embedded Source = "embedded"
)

// Value is a JSON value found in a text.
type Value struct {
	// Text is the JSON text exactly as it appears in the input (a
	// substring of it), without surrounding white space. It is valid JSON;
	// decode it with encoding/json.
	Text string
	// Offset is where Text starts in the input, in bytes.
	Offset int
	// Source is where it was found.
	Source Source
}

// Limits on the work done for one text. A model's answer is untrusted: it
// may hold any bytes, of any length, and may be built to make a naive
// search quadratic.
const (
	// MaxStarts is the number of candidate positions (an opening { or [)
	// tried for embedded values, by Find and by Objects. Every successful
	// or failed candidate counts.
	MaxStarts = 64
	// MaxFences is the number of fenced blocks whose body Find tries.
	MaxFences = 64
	// maxRuns bounds the runs of backticks Find considers as fences.
	maxRuns = 4 * MaxFences
	// baseBudget is the number of bytes the speculative searches (fenced
	// blocks, embedded values) may read on top of twice the input's
	// length.
	baseBudget = 1 << 20
)

// Find returns the JSON value a text gives, trying in order:
//
//  1. the whole text, trimmed of white space, when it is exactly one JSON
//     value (any value: an object, an array, a string, a number...);
//  2. the body of the first ``` fenced code block that is exactly one JSON
//     value. The opening fence's info string (```json, ```JSON,
//     ```jsonc title="a.json"...) is dropped: the rest of the opening
//     line, unless it starts, past white space, with {, [ or ". A block opened by a longer fence (````) closes only at a
//     fence at least as long, as in Markdown; when its body is not JSON,
//     the blocks nested inside it are tried. A fence with no closing fence
//     opens no block. A one-line block ("```{"a": 1}```") counts.
//  3. the first object or array amid the text, starting at an opening {
//     or [ (MaxStarts of them are tried), that parses as JSON; it ends
//     where the value ends, so trailing text is allowed.
//
// Brackets and fences inside JSON strings are part of the string.
// Invalid UTF-8 is no obstacle: JSON strings may hold any bytes but
// control characters (a decoder replaces invalid sequences with U+FFFD).
//
// The work is linear in the length of the text: besides one pass over the
// whole text, the fenced and embedded searches together read at most
// twice its length plus 1 MiB, and give up past that.
//
// Find reports false when no JSON value was found.
func Find(text string) (Value, bool) {
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		return Value{}, false
	}
	if json.Valid([]byte(trimmed)) {
		return Value{Text: trimmed, Offset: leadingSpace(text), Source: Whole}, true
	}
	b := newBudget(len(text))
	if v, ok := findFence(text, b); ok {
		return v, true
	}
	for v := range embedded(text, "{[", b) {
		return v, true
	}
	return Value{}, false
}

// Objects yields the JSON objects found amid a text, from left to right:
// at each opening { (MaxStarts of them are tried), the object that starts
// there, when it parses; the search goes on after its end, so objects
// nested in a yielded one are not yielded on their own. Fences and other
// text around the objects are ignored. Its work is bounded as Find's.
func Objects(text string) iter.Seq[Value] {
	return embedded(text, "{", newBudget(len(text)))
}

// leadingSpace is the length of the white space strings.TrimSpace drops
// at the start of s.
func leadingSpace(s string) int {
	return len(s) - len(strings.TrimLeftFunc(s, unicode.IsSpace))
}

// budget is the number of bytes the speculative searches may still read.
type budget struct{ left int }

func newBudget(n int) *budget { return &budget{left: 2*n + baseBudget} }

// take charges n bytes, reporting false when fewer are left.
func (b *budget) take(n int) bool {
	if n > b.left {
		b.left = 0
		return false
	}
	b.left -= n
	return true
}

// errBudget ends a decode that would read past the budget.
var errBudget = errors.New("textjson: work budget spent")

// budgetReader reads s, charging every byte to a budget.
type budgetReader struct {
	s string
	b *budget
}

func (r *budgetReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := min(len(p), len(r.s), r.b.left)
	if n == 0 {
		return 0, errBudget
	}
	r.b.take(n)
	copy(p, r.s[:n])
	r.s = r.s[n:]
	return n, nil
}

// embedded yields the values that start at an opening byte of starts and
// parse, left to right and not overlapping.
func embedded(text, starts string, b *budget) iter.Seq[Value] {
	return func(yield func(Value) bool) {
		for i, tries := 0, 0; tries < MaxStarts; tries++ {
			j := strings.IndexAny(text[i:], starts)
			if j < 0 {
				return
			}
			i += j
			dec := json.NewDecoder(&budgetReader{s: text[i:], b: b})
			var raw json.RawMessage
			err := dec.Decode(&raw)
			switch {
			case errors.Is(err, errBudget):
				return
			case err != nil:
				i++
				continue
			}
			end := i + int(dec.InputOffset())
			if !yield(Value{Text: text[i:end], Offset: i, Source: Embedded}) {
				return
			}
			i = end
		}
	}
}

// startsJSON reports whether line, past white space, starts with {, [ or
// ".
func startsJSON(line string) bool {
	line = strings.TrimLeftFunc(line, unicode.IsSpace)
	return line != "" && strings.IndexByte(`{["`, line[0]) >= 0
}

// run is a run of three or more backticks.
type run struct{ start, end int }

func (r run) len() int { return r.end - r.start }

// fenceRuns finds the first maxRuns runs of three or more backticks.
func fenceRuns(text string) []run {
	var runs []run
	for i := 0; len(runs) < maxRuns; {
		j := strings.Index(text[i:], "```")
		if j < 0 {
			break
		}
		start := i + j
		end := start + 3
		for end < len(text) && text[end] == '`' {
			end++
		}
		runs = append(runs, run{start, end})
		i = end
	}
	return runs
}

// findFence returns the first fenced block whose body is one JSON value.
func findFence(text string, b *budget) (Value, bool) {
	runs := fenceRuns(text)
	for i, tried := 0, 0; i < len(runs) && tried < MaxFences; {
		open := runs[i]
		closer := -1
		for j := i + 1; j < len(runs); j++ {
			if runs[j].len() >= open.len() {
				closer = j
				break
			}
		}
		if closer < 0 {
			// No closing fence: not a block; a later run may open one.
			i++
			continue
		}
		tried++
		bodyStart, bodyEnd := open.end, runs[closer].start
		body := text[bodyStart:bodyEnd]
		// The info string: the rest of the opening line, unless the JSON
		// starts there.
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && !startsJSON(body[:nl]) {
			bodyStart += nl + 1
			body = body[nl+1:]
		}
		trimmed := strings.TrimSpace(body)
		if trimmed != "" {
			if !b.take(len(trimmed)) {
				return Value{}, false
			}
			if json.Valid([]byte(trimmed)) {
				return Value{Text: trimmed, Offset: bodyStart + leadingSpace(body), Source: Fence}, true
			}
		}
		if closer > i+1 {
			// Shorter fences inside: blocks nested in this one.
			i++
		} else {
			i = closer + 1
		}
	}
	return Value{}, false
}
