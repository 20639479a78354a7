package jsonschema

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// Where the JSON value of a response was found; details["json_source"].
const (
	sourceResponse = "response" // the whole response is one JSON value
	sourceFence    = "fence"    // the first ``` fenced block that parses
	sourceEmbedded = "embedded" // the first {...} or [...] in the text that parses
	sourceNone     = "none"     // no JSON found
)

// maxJSONStarts bounds the positions findJSON tries for an embedded value,
// so that a long text full of unbalanced brackets costs linear time, not
// quadratic.
const maxJSONStarts = 64

// found is a JSON value read from a response.
type found struct {
	value  any    // decoded with json.Number, as the validator wants
	text   string // the JSON text as it appeared
	source string
}

// findJSON reads the JSON value a response gives: the whole trimmed
// response, else the first ``` fenced block whose body parses (```json or
// any other info string, or none), else the first object or array in the
// text that parses.
func findJSON(response string) (found, bool) {
	s := strings.TrimSpace(response)
	if s == "" {
		return found{source: sourceNone}, false
	}
	if v, err := decodeOne(s); err == nil {
		return found{value: v, text: s, source: sourceResponse}, true
	}
	for rest := s; ; {
		_, after, ok := strings.Cut(rest, "```")
		if !ok {
			break
		}
		body, tail, closed := strings.Cut(after, "```")
		if !closed {
			break
		}
		// Drop the info string (```json): the rest of the opening line when
		// it holds no JSON.
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[\"") {
			body = body[nl+1:]
		}
		body = strings.TrimSpace(body)
		if v, err := decodeOne(body); err == nil {
			return found{value: v, text: body, source: sourceFence}, true
		}
		rest = tail
	}
	for i, tries := 0, 0; i < len(s) && tries < maxJSONStarts; i++ {
		if s[i] != '{' && s[i] != '[' {
			continue
		}
		tries++
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			return found{value: v, text: s[i : i+int(dec.InputOffset())], source: sourceEmbedded}, true
		}
	}
	return found{source: sourceNone}, false
}

var errTrailing = errors.New("invalid character after top-level value")

// decodeOne decodes s as exactly one JSON value, keeping numbers as
// json.Number.
func decodeOne(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errTrailing
	}
	return v, nil
}
