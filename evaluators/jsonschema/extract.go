package jsonschema

import (
	"encoding/json"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness/textjson"
)

// Where the JSON value of a response was found; details["json_source"].
const (
	sourceResponse = "response" // the whole response is one JSON value
	sourceFence    = "fence"    // the first ``` fenced block that parses
	sourceEmbedded = "embedded" // the first {...} or [...] in the text that parses
	sourceNone     = "none"     // no JSON found
)

// sources maps textjson's sources to the values of details["json_source"].
var sources = map[textjson.Source]string{
	textjson.Whole:    sourceResponse,
	textjson.Fence:    sourceFence,
	textjson.Embedded: sourceEmbedded,
}

// found is a JSON value read from a response.
type found struct {
	value  any    // decoded with json.Number, as the validator wants
	text   string // the JSON text as it appeared
	source string
}

// findJSON reads the JSON value a response gives, as textjson.Find finds
// it: the whole trimmed response, else the first ``` fenced block whose
// body parses, else the first object or array in the text that parses.
func findJSON(response string) (found, bool) {
	v, ok := textjson.Find(response)
	if !ok {
		return found{source: sourceNone}, false
	}
	value, err := decode(v.Text)
	if err != nil {
		return found{source: sourceNone}, false
	}
	return found{value: value, text: v.Text, source: sources[v.Source]}, true
}

// decode decodes a JSON text, keeping numbers as json.Number.
func decode(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
