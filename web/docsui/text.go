package docsui

import "strings"

// text is a description of the OpenAPI document as the page shows it: a
// small subset of Markdown read by this package, never HTML. Blank lines
// separate blocks; a block whose lines all begin with "- " or "* " is a
// list; `backticks` mark code. Everything else is plain text, which the
// template escapes like any other string.
type text []block

// block is a paragraph (Items nil) or a list.
type block struct {
	Para  []span
	Items [][]span
}

// span is a run of plain text or, with Code, of code.
type span struct {
	Text string
	Code bool
}

// parseText splits s into blocks.
func parseText(s string) text {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n")
	if s == "" {
		return nil
	}
	var out text
	for raw := range strings.SplitSeq(s, "\n\n") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		lines := strings.Split(raw, "\n")
		if items, ok := listItems(lines); ok {
			b := block{}
			for _, it := range items {
				b.Items = append(b.Items, spans(it))
			}
			out = append(out, b)
			continue
		}
		out = append(out, block{Para: spans(strings.Join(lines, "\n"))})
	}
	return out
}

// listItems returns the items of lines when every line begins a list item
// or continues the previous one (indented).
func listItems(lines []string) ([]string, bool) {
	var items []string
	for _, l := range lines {
		trimmed := strings.TrimSpace(l)
		if rest, ok := cutBullet(trimmed); ok {
			items = append(items, rest)
			continue
		}
		if len(items) == 0 || trimmed == "" || l == trimmed {
			return nil, false
		}
		items[len(items)-1] += " " + trimmed
	}
	return items, len(items) > 0
}

func cutBullet(l string) (string, bool) {
	for _, p := range []string{"- ", "* "} {
		if rest, ok := strings.CutPrefix(l, p); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// spans splits s on backticks: the text between a pair is code. An
// unpaired backtick is kept as text.
func spans(s string) []span {
	var out []span
	for {
		start := strings.IndexByte(s, '`')
		if start < 0 {
			break
		}
		end := strings.IndexByte(s[start+1:], '`')
		if end < 0 {
			break
		}
		if start > 0 {
			out = append(out, span{Text: s[:start]})
		}
		if end > 0 {
			out = append(out, span{Text: s[start+1 : start+1+end], Code: true})
		}
		s = s[start+1+end+1:]
	}
	if s != "" {
		out = append(out, span{Text: s})
	}
	return out
}
