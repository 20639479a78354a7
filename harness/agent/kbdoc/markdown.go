package kbdoc

import "strings"

// extractMarkdown keeps Markdown as it is written (lists, emphasis and
// links stay readable as text) and takes its structure from headings:
// "#" to "######" lines, and setext headings (a line underlined with "="
// or "-"). Lines inside fenced code blocks are never headings.
func extractMarkdown(l *limits, s string) *Document {
	s = strings.ReplaceAll(strings.TrimPrefix(s, "\uFEFF"), "\r\n", "\n")
	lines := strings.Split(s, "\n")
	b := builder{lim: l}
	var para []string
	fence := ""
	flushPara := func() {
		if len(para) > 0 {
			b.paragraph(strings.Join(para, "\n"), false)
			para = para[:0]
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trim := strings.TrimSpace(line)
		if fence != "" {
			para = append(para, line)
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			para = append(para, line)
			continue
		}
		if level, title, ok := atxHeading(line); ok {
			flushPara()
			b.heading(level, title)
			continue
		}
		if trim != "" && len(para) == 0 && i+1 < len(lines) && !isListItem(trim) {
			if u := strings.TrimSpace(lines[i+1]); len(u) >= 2 && (strings.Trim(u, "=") == "" || strings.Trim(u, "-") == "") {
				level := 1
				if u[0] == '-' {
					level = 2
				}
				b.heading(level, trim)
				i++
				continue
			}
		}
		if trim == "" {
			flushPara()
			continue
		}
		para = append(para, strings.TrimRight(line, " \t"))
	}
	flushPara()
	return b.document()
}

// atxHeading parses "## Title ##" (at most three spaces of indent).
func atxHeading(line string) (int, string, bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || !strings.HasPrefix(t, "#") {
		return 0, "", false
	}
	level := len(t) - len(strings.TrimLeft(t, "#"))
	rest := t[level:]
	if level > 6 || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return 0, "", false
	}
	title := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(rest), "#"))
	return level, title, title != ""
}

func isListItem(t string) bool {
	if strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "+ ") {
		return true
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && t[i+1] == ' '
}
