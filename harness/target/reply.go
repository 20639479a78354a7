package target

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// parseHTTPURL parses a resolved URL: http or https with a host, no
// credentials. It returns the text to show (without credentials).
func parseHTTPURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "the url", errors.New("not a URL")
	}
	shown := u.Redacted()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return shown, errors.New("not an http or https URL")
	case u.Host == "":
		return shown, errors.New("no host")
	case u.User != nil:
		return shown, errors.New("it holds credentials")
	}
	return shown, nil
}

// parse reads a successful reply at the definition's pointers.
func (c *Client) parse(res *http.Response, data []byte) (*Reply, *Error) {
	ct := res.Header.Get("Content-Type")
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := dec.Decode(&doc)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		switch {
		case isHTML(ct, data):
			return nil, c.fail(res.StatusCode, "the target answered an HTML page, not JSON ("+snippet(data, 80)+")", harness.AttemptMalformed, false, ErrMalformedResponse)
		case len(bytes.TrimSpace(data)) == 0:
			return nil, c.fail(res.StatusCode, "the target answered an empty body, not JSON", harness.AttemptMalformed, true, ErrMalformedResponse)
		}
		what := "a body"
		if mt, _, perr := mime.ParseMediaType(ct); perr == nil && mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			what = mt
		}
		return nil, c.fail(res.StatusCode, fmt.Sprintf("the target answered %s that is not JSON (%v): %s", what, err, snippet(data, 80)),
			harness.AttemptMalformed, true, ErrMalformedResponse)
	}
	malformed := func(format string, args ...any) *Error {
		return c.fail(res.StatusCode, fmt.Sprintf(format, args...), harness.AttemptMalformed, false, ErrMalformedResponse)
	}
	r := c.def.Response
	out := &Reply{}
	v, err := lookup(doc, r.Answer)
	if err != nil {
		return nil, malformed("no answer in the reply: %v", err)
	}
	answer, ok := v.(string)
	if !ok {
		return nil, malformed("the answer at %s is %s, not a string", r.Answer, kindOf(v))
	}
	out.Answer = answer
	if r.ToolCalls != "" {
		v, err := lookup(doc, r.ToolCalls)
		if err != nil {
			return nil, malformed("no tool calls in the reply: %v", err)
		}
		if out.ToolCalls, err = toolCalls(v); err != nil {
			return nil, malformed("the tool calls at %s: %v", r.ToolCalls, err)
		}
	}
	if r.Sources != "" {
		v, err := lookup(doc, r.Sources)
		if err != nil {
			return nil, malformed("no sources in the reply: %v", err)
		}
		if out.Sources, err = sources(v); err != nil {
			return nil, malformed("the sources at %s: %v", r.Sources, err)
		}
	}
	return out, nil
}

// lookup resolves a JSON pointer (RFC 6901) in a decoded document. Its
// error names the pointer and what is there instead.
func lookup(doc any, pointer string) (any, error) {
	if pointer == "" {
		return doc, nil
	}
	cur := doc
	at := ""
	for _, tok := range strings.Split(pointer[1:], "/") {
		key := strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[key]
			if !ok {
				return nil, fmt.Errorf("nothing at %s (%s has %s)", pointer, where(at), keysOf(x))
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || (len(key) > 1 && key[0] == '0') {
				return nil, fmt.Errorf("nothing at %s (%s is an array, and %q is not an index)", pointer, where(at), key)
			}
			if i >= len(x) {
				return nil, fmt.Errorf("nothing at %s (%s is an array of %d)", pointer, where(at), len(x))
			}
			cur = x[i]
		default:
			return nil, fmt.Errorf("nothing at %s (%s is %s)", pointer, where(at), kindOf(cur))
		}
		at += "/" + tok
	}
	return cur, nil
}

func where(at string) string {
	if at == "" {
		return "the reply"
	}
	return at
}

// keysOf lists an object's keys for a message: a few, sorted.
func keysOf(m map[string]any) string {
	if len(m) == 0 {
		return "no keys"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	more := ""
	if len(keys) > 8 {
		keys, more = keys[:8], ", …"
	}
	return "keys " + strings.Join(keys, ", ") + more
}

// kindOf names a JSON value's kind with an article.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// toolCalls reads an array of tool calls: {id?, name, arguments} or
// OpenAI's {id?, type?, function: {name, arguments}}; arguments is an
// object or a string holding one (absent: {}). null is no call.
func toolCalls(v any) ([]harness.ToolCall, error) {
	if v == nil {
		return []harness.ToolCall{}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s, not an array", kindOf(v))
	}
	out := make([]harness.ToolCall, 0, len(list))
	for i, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("[%d] is %s, not an object", i, kindOf(item))
		}
		call := harness.ToolCall{}
		call.ID, _ = obj["id"].(string)
		fn := obj
		if f, ok := obj["function"].(map[string]any); ok {
			fn = f
		}
		call.Name, _ = fn["name"].(string)
		if call.Name == "" {
			return nil, fmt.Errorf("[%d] has no name (name, or function.name)", i)
		}
		args, err := arguments(fn["arguments"])
		if err != nil {
			return nil, fmt.Errorf("[%d].arguments: %v", i, err)
		}
		call.Arguments = args
		out = append(out, call)
	}
	return out, nil
}

func arguments(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "{}", nil
	case string:
		if !json.Valid([]byte(x)) {
			return "", errors.New("a string that is not JSON")
		}
		return x, nil
	case map[string]any:
		b, err := json.Marshal(x)
		return string(b), err
	}
	return "", fmt.Errorf("%s, not an object", kindOf(v))
}

// sources reads an array of sources: file names, or objects with file
// (or filename, source), chunk and score (absent: 1). null is none.
func sources(v any) ([]harness.Source, error) {
	if v == nil {
		return []harness.Source{}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s, not an array", kindOf(v))
	}
	out := make([]harness.Source, 0, len(list))
	for i, item := range list {
		switch x := item.(type) {
		case string:
			out = append(out, harness.Source{File: x, Score: 1})
		case map[string]any:
			s := harness.Source{Score: 1}
			for _, k := range []string{"file", "filename", "source"} {
				if f, ok := x[k].(string); ok && f != "" {
					s.File = f
					break
				}
			}
			if s.File == "" {
				return nil, fmt.Errorf("[%d] names no file (file, filename or source)", i)
			}
			if n, ok := x["chunk"].(json.Number); ok {
				c, _ := n.Int64()
				s.Chunk = int(c)
			}
			if n, ok := x["score"].(json.Number); ok {
				s.Score, _ = n.Float64()
			}
			out = append(out, s)
		default:
			return nil, fmt.Errorf("[%d] is %s, not a file name or an object", i, kindOf(item))
		}
	}
	return out, nil
}
