package dataset

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// mmluColumns are the columns of MMLU's CSV files, which have no header.
var mmluColumns = []string{"question", "A", "B", "C", "D", "answer"}

// csv reads a header and records; MMLU's layout has no header.
func (p *parser) csv(data []byte) error {
	delim, _ := delimiter(p.opts.Delimiter) // checked by newParser
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma = delim
	r.FieldsPerRecord = -1
	r.ReuseRecord = false
	mmlu := p.opts.Preset == MMLU
	var header map[string]int
	if mmlu {
		header = map[string]int{}
		for i, c := range mmluColumns {
			header[c] = i
		}
	}
	first := true
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		line := 0
		if err == nil && len(rec) > 0 {
			line, _ = r.FieldPos(0)
		}
		var pe *csv.ParseError
		if err != nil && !errors.As(err, &pe) {
			return fmt.Errorf("read csv: %w", err)
		}
		if first && !mmlu {
			first = false
			if err != nil {
				return harness.Invalid("data", "the CSV header does not parse: %v", pe.Err)
			}
			header, err = p.header(rec)
			if err != nil {
				return err
			}
			continue
		}
		if first && mmlu {
			first = false
			if err == nil && len(rec) == len(mmluColumns) && strings.EqualFold(strings.TrimSpace(rec[len(rec)-1]), "answer") {
				continue // a header someone added
			}
		}
		if lerr := p.limit(); lerr != nil {
			return lerr
		}
		if err != nil {
			p.res.Total++
			line = pe.StartLine
			p.res.Errors = append(p.res.Errors, RowError{Row: p.res.Total, Line: line, Message: "not valid CSV: " + pe.Err.Error()})
			continue
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // a blank line within the data
		}
		fields := rec
		p.row(&record{
			row: p.res.Total + 1, line: line,
			get: func(col string) (string, bool, error) {
				i, ok := header[col]
				if !ok || i >= len(fields) {
					return "", false, nil
				}
				return fields[i], true, nil
			},
			raw: func(col string) (json.RawMessage, bool) {
				i, ok := header[col]
				if !ok || i >= len(fields) || strings.TrimSpace(fields[i]) == "" {
					return nil, false
				}
				return json.RawMessage(fields[i]), true
			},
			choices: func() ([]string, error) {
				if len(fields) < len(mmluColumns) {
					return nil, fmt.Errorf("the record has %d fields, want 6: question,A,B,C,D,answer", len(fields))
				}
				return fields[1:5], nil
			},
		})
	}
}

// header maps column names to positions and checks that the columns the
// options read are there. Names are matched exactly, else ignoring case
// and surrounding spaces; the mapped names become the keys.
func (p *parser) header(rec []string) (map[string]int, error) {
	exact := map[string]int{}
	folded := map[string]int{}
	for i, name := range rec {
		if _, dup := exact[name]; !dup {
			exact[name] = i
		}
		k := strings.ToLower(strings.TrimSpace(name))
		if _, dup := folded[k]; !dup {
			folded[k] = i
		}
	}
	out := map[string]int{}
	find := func(col string) bool {
		if i, ok := exact[col]; ok {
			out[col] = i
			return true
		}
		if i, ok := folded[strings.ToLower(strings.TrimSpace(col))]; ok {
			out[col] = i
			return true
		}
		return false
	}
	ve := &harness.ValidationError{}
	need := func(field string, cols []string) {
		found := false
		for _, c := range cols {
			if find(c) {
				found = true
			}
		}
		if !found {
			ve.Add(field, "the CSV header has no column %s (columns: %s)", orList(cols), strings.Join(quoteAll(rec), ", "))
		}
	}
	conv := false
	if p.opts.Preset == "" {
		for _, c := range conversationColumns {
			conv = find(c) || conv
		}
	}
	if conv {
		// A row may be a conversation: the prompt and answer columns
		// are read when there.
		for _, c := range append(append([]string{}, p.prompt...), p.answer...) {
			find(c)
		}
	} else {
		need("mapping.prompt", p.prompt)
		need("mapping.answer", p.answer)
	}
	for _, c := range append(append([]string{}, p.typ...), p.id...) {
		find(c)
	}
	if p.opts.Mapping.Type != "" && !find(p.opts.Mapping.Type) {
		ve.Add("mapping.type", "the CSV header has no column %q", p.opts.Mapping.Type)
	}
	if p.opts.Mapping.ID != "" && !find(p.opts.Mapping.ID) {
		ve.Add("mapping.id", "the CSV header has no column %q", p.opts.Mapping.ID)
	}
	return out, ve.Err()
}

func orList(cols []string) string {
	return strings.Join(quoteAll(cols), " or ")
}

func quoteAll(ss []string) []string {
	out := make([]string, 0, len(ss))
	for i, s := range ss {
		if i == 20 {
			out = append(out, "…")
			break
		}
		out = append(out, fmt.Sprintf("%q", truncate(s)))
	}
	return out
}
