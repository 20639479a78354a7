package llmtest

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// KnowledgeText returns the knowledge-base text a system message of msgs
// holds: what follows its last line starting with "Knowledge base" and
// ending with a colon ("Knowledge base:", "Knowledge base excerpts (…):"),
// as an agent's retrieval writes it. It reports false when no system
// message has such a line.
func KnowledgeText(msgs []harness.Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != harness.RoleSystem {
			continue
		}
		text := m.Content
		for end := len(text); end > 0; {
			at := strings.LastIndex(text[:end], "Knowledge base")
			if at < 0 {
				break
			}
			end = at
			if at > 0 && text[at-1] != '\n' {
				continue
			}
			line, rest, _ := strings.Cut(text[at:], "\n")
			if strings.HasSuffix(strings.TrimSpace(line), ":") {
				return rest, true
			}
		}
	}
	return "", false
}

var sentenceEndRE = regexp.MustCompile(`[.!?]["')\]]?\s+`)

// sentences splits knowledge-base text into the sentences an answer is
// picked from, in order: paragraphs (blocks between blank lines) are cut
// after each full stop, question or exclamation mark; a line that is a list
// item ("- ", "* ", "1. ") or a table row (cells joined by " | ") stands
// alone; the other lines of a paragraph are joined with spaces, as a
// paragraph wrapped on a page. Lines starting with "#" (the headers that
// name each file and part) are left out, and so are headings: paragraphs
// of one line that end with no full stop, or with a question mark (as the
// questions heading a FAQ).
func sentences(text string) []string {
	var out []string
	for _, block := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		var units []string
		var para []string
		flush := func() {
			if len(para) > 0 {
				units = append(units, strings.Join(para, " "))
				para = nil
			}
		}
		lines := 0
		for _, line := range strings.Split(block, "\n") {
			line = strings.TrimSpace(line)
			switch {
			case line == "" || strings.HasPrefix(line, "#"):
			case isItem(line):
				flush()
				units = append(units, line)
				lines++
			default:
				para = append(para, line)
				lines++
			}
		}
		flush()
		if lines == 1 && len(units) == 1 && isHeading(units[0]) {
			continue
		}
		for _, u := range units {
			if isItem(u) {
				out = append(out, u)
				continue
			}
			start := 0
			for _, loc := range sentenceEndRE.FindAllStringIndex(u, -1) {
				out = append(out, strings.TrimSpace(u[start:loc[1]]))
				start = loc[1]
			}
			if s := strings.TrimSpace(u[start:]); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

var itemRE = regexp.MustCompile(`^(?:[-*•]\s|\d+[.)]\s)`)

// isHeading reports whether a paragraph of one line is a heading.
func isHeading(line string) bool {
	if isItem(line) {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(line)
	return !strings.ContainsRune(".!:;", last)
}

// isItem reports whether a line is a list item or a table row.
func isItem(line string) bool {
	return itemRE.MatchString(line) || strings.Contains(line, " | ")
}

// BestSentence returns the sentence of a knowledge-base text that shares the most words with the question, the first
// of those that share as many; false when none shares a word. Words are
// runs of letters and digits, compared lower-cased, stop words ("the",
// "how", "is"…) left out; two words of more than five letters that start
// with the same five are the same word, so "refunded" meets "refund", as
// in [Embedding]. Sentences are cut after full stops, question and
// exclamation marks; list items and table rows (cells joined by " | ")
// stand alone; headings and the lines starting with "#" that name each
// file are left out. Retrieval that puts the right text first, or leaves the
// wrong text out, gives the right sentence.
func BestSentence(text, question string) (string, bool) {
	want := map[string]bool{}
	for _, w := range answerWords(question) {
		want[w] = true
	}
	if len(want) == 0 {
		return "", false
	}
	best, bestN := "", 0
	for _, s := range sentences(text) {
		seen := map[string]bool{}
		for _, w := range answerWords(s) {
			if want[w] {
				seen[w] = true
			}
		}
		if len(seen) > bestN {
			best, bestN = s, len(seen)
		}
	}
	return best, bestN > 0
}

// answerWords are the words of s as BestSentence compares them: lower
// case, stop words left out, words of more than five letters cut to their
// first five.
func answerWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if embedStopWords[w] {
			continue
		}
		if r := []rune(w); len(r) > 5 {
			w = string(r[:5])
		}
		out = append(out, w)
	}
	return out
}
