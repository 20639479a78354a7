package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// conversationColumns are the columns a multi-turn test is read from, the
// first present wins: "turns", a JSON list of {user, expected?} (expected
// an object {answer, type…} or the answer alone), or "messages", an
// OpenAI-shaped JSON list of {role, content}, in which each user message
// is a turn and an assistant message is the expected answer of the user
// turn before it. In a CSV file the cell holds the JSON text.
var conversationColumns = []string{"turns", "messages"}

// conversation reads a row's turns, when the row has a conversation
// column (ok); typ is the expected type of turns that give none.
func (p *parser) conversation(rec *record, typ string) (turns []harness.Turn, col string, ok bool, err error) {
	if rec.raw == nil {
		return nil, "", false, nil
	}
	for _, c := range conversationColumns {
		raw, present := rec.raw(c)
		if !present {
			continue
		}
		raw = bytes.TrimSpace(raw)
		if c == "turns" {
			turns, err = parseTurns(raw, typ)
		} else {
			turns, err = parseMessages(raw, typ)
		}
		return turns, c, true, err
	}
	return nil, "", false, nil
}

// parseTurns reads a "turns" value.
func parseTurns(raw []byte, typ string) ([]harness.Turn, error) {
	var list []struct {
		User     *string         `json:"user"`
		Expected json.RawMessage `json:"expected"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New(`must be a JSON list of {"user": …, "expected": …}`)
	}
	out := make([]harness.Turn, len(list))
	for i, t := range list {
		if t.User != nil {
			out[i].User = *t.User
		}
		e := bytes.TrimSpace(t.Expected)
		switch {
		case len(e) == 0 || string(e) == "null":
		case e[0] == '"':
			var answer string
			if err := json.Unmarshal(e, &answer); err != nil {
				return nil, fmt.Errorf("turn %d: expected is not valid JSON", i+1)
			}
			out[i].Expected = &harness.Expected{Answer: answer, Type: typ}
		default:
			var exp harness.Expected
			if err := json.Unmarshal(e, &exp); err != nil {
				return nil, fmt.Errorf("turn %d: expected must be the answer or an object {answer, type}", i+1)
			}
			if exp.Type == "" {
				exp.Type = typ
			}
			out[i].Expected = &exp
		}
	}
	return out, nil
}

// parseMessages reads a "messages" value.
func parseMessages(raw []byte, typ string) ([]harness.Turn, error) {
	var list []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New(`must be a JSON list of {"role": …, "content": …}`)
	}
	var out []harness.Turn
	for i, m := range list {
		switch m.Role {
		case harness.RoleUser:
			out = append(out, harness.Turn{User: m.Content})
		case harness.RoleAssistant:
			if len(out) == 0 || out[len(out)-1].Expected != nil {
				return nil, fmt.Errorf("message %d: an assistant message must follow a user message", i+1)
			}
			out[len(out)-1].Expected = &harness.Expected{Answer: strings.TrimSpace(m.Content), Type: typ}
		case harness.RoleSystem:
			return nil, fmt.Errorf("message %d: a system message is not imported: the level's system prompt applies", i+1)
		default:
			return nil, fmt.Errorf("message %d: role %q is not user or assistant", i+1, m.Role)
		}
	}
	if out == nil {
		out = []harness.Turn{}
	}
	return out, nil
}

// conversationRow turns a row with a conversation column into a
// multi-turn test, or row errors.
func (p *parser) conversationRow(rec *record, turns []harness.Turn, col string, fail func(col, format string, args ...any)) {
	if _, promptCol, ok, _ := first(rec, p.prompt); ok {
		fail(promptCol, "a row gives a prompt or a %s column, not both", col)
		return
	}
	t := harness.Test{DomainID: p.opts.DomainID, Level: p.opts.Level, Turns: turns}
	p.addTest(rec, t, "same conversation", fail, func(f harness.FieldError, idCol string) {
		c := col
		if f.Field == "id" {
			c = idCol
		}
		fail(c, "%s: %s", f.Field, f.Message)
	})
}
