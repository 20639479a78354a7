package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// jsonl reads one JSON object per non-blank line.
func (p *parser) jsonl(data []byte) error {
	line := 0
	for len(data) > 0 {
		var text []byte
		text, data, _ = bytes.Cut(data, []byte("\n"))
		line++
		text = bytes.TrimRight(text, "\r")
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		if err := p.limit(); err != nil {
			return err
		}
		row := p.res.Total + 1
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(text, &obj); err != nil || obj == nil {
			p.res.Total++
			msg := "not a JSON object"
			var se *json.SyntaxError
			if errors.As(err, &se) {
				msg = fmt.Sprintf("not valid JSON: %v", se)
			}
			p.res.Errors = append(p.res.Errors, RowError{Row: row, Line: line, Message: msg})
			continue
		}
		p.row(&record{
			row: row, line: line,
			get: func(col string) (string, bool, error) { return jsonText(obj[col]) },
			raw: func(col string) (json.RawMessage, bool) {
				v, ok := obj[col]
				return v, ok && string(bytes.TrimSpace(v)) != "null"
			},
			choices: func() ([]string, error) {
				raw, ok := obj["choices"]
				if !ok || string(raw) == "null" {
					return nil, errors.New("missing")
				}
				var list []json.RawMessage
				if err := json.Unmarshal(raw, &list); err != nil {
					return nil, errors.New("must be a list of 4 choices")
				}
				if len(list) != 4 {
					return nil, fmt.Errorf("has %d items, want 4 (A to D)", len(list))
				}
				out := make([]string, len(list))
				for i, item := range list {
					s, ok, err := jsonText(item)
					if err != nil || !ok {
						return nil, fmt.Errorf("item %d must be text", i)
					}
					out[i] = s
				}
				return out, nil
			},
		})
	}
	return nil
}

// limit refuses a row over the row limit.
func (p *parser) limit() error {
	max := p.opts.MaxRows
	if max <= 0 {
		max = DefaultMaxRows
	}
	if p.res.Total >= max {
		return fmt.Errorf("%w: more than %d rows", ErrTooLarge, max)
	}
	return nil
}

// jsonText reads a JSON value as text: a string, a number as written, a
// boolean. Absent and null are not present; objects and arrays are errors.
func jsonText(raw json.RawMessage) (string, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", true, errors.New("is not a valid string")
		}
		return s, true, nil
	case 't', 'f':
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", true, errors.New("is not valid JSON")
		}
		return strconv.FormatBool(b), true, nil
	case '{', '[':
		return "", true, errors.New("must be text or a number, not an object or a list")
	default:
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return "", true, errors.New("is not valid JSON")
		}
		return n.String(), true, nil
	}
}
