package catalog

import (
	"bytes"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// chunkMin is the size from which a level file is decoded test by test
// (decodeTestsChunked) rather than whole. The YAML parser holds a whole
// file's syntax tree while it decodes it, about fifty times the file's
// size: test by test, it holds one test's. A variable for the tests.
var chunkMin = 256 << 10

// decodeTestsChunked decodes a level file of the plain shape — a block
// sequence of tests under a top-level "tests:" key, no document markers,
// directives or tabs in indentation — one test at a time: the file
// without its tests, then each test's lines on their own. It reports
// false when the file is not of that shape or any part does not decode
// on its own (an alias of an anchor in another test, a flow sequence, an
// error): the caller then decodes the file whole, which gives the same
// values for a valid file and the exact error, with its line, for one
// that is not.
func decodeTestsChunked(data []byte) (levelDoc, bool) {
	head, items, ok := splitTests(data)
	if !ok {
		return levelDoc{}, false
	}
	var doc levelDoc
	if err := decodeStrict(head, &doc); err != nil || doc.Tests != nil {
		return levelDoc{}, false
	}
	doc.Tests = make([]harness.Test, 0, len(items))
	for _, item := range items {
		var one []harness.Test
		if err := decodeStrict(item, &one); err != nil || len(one) != 1 {
			return levelDoc{}, false
		}
		doc.Tests = append(doc.Tests, one[0])
	}
	return doc, true
}

// splitTests splits a level file into its text without the tests (the
// "tests:" line kept, with no value) and the text of each test, its
// lines moved left by the sequence's indentation. ok is false when the
// file is not of the plain shape decodeTestsChunked takes.
func splitTests(data []byte) (head []byte, items [][]byte, ok bool) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	start := -1
	for i, l := range lines {
		if len(l) > 0 && (l[0] == '\t' || l[0] == '%' || bytes.HasPrefix(l, []byte("---")) || bytes.HasPrefix(l, []byte("..."))) {
			return nil, nil, false
		}
		if start < 0 && bytes.HasPrefix(l, []byte("tests:")) {
			if rest := bytes.TrimSpace(l[len("tests:"):]); len(rest) > 0 && rest[0] != '#' {
				return nil, nil, false // a value on the key's line: a flow sequence, an anchor, a tag
			}
			start = i
		}
	}
	if start < 0 {
		return nil, nil, false
	}
	indent := -1
	var cur []byte
	end := len(lines)
scan:
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		n := leadingSpaces(l)
		body := bytes.TrimRight(l[n:], "\r\n")
		if len(body) == 0 || body[0] == '#' {
			if cur != nil {
				cur = append(cur, l[min(n, max(indent, 0)):]...)
			}
			continue
		}
		if n < len(l) && l[n] == '\t' {
			return nil, nil, false
		}
		isItem := body[0] == '-' && (len(body) == 1 || body[1] == ' ')
		if indent < 0 {
			if !isItem {
				return nil, nil, false // not a block sequence
			}
			indent = n
		}
		switch {
		case n == indent && isItem:
			if cur != nil {
				items = append(items, cur)
			}
			cur = append([]byte(nil), l[indent:]...)
		case n > indent:
			cur = append(cur, l[indent:]...)
		default:
			end = i // the tests end: the rest is the head's
			break scan
		}
	}
	if cur == nil {
		return nil, nil, false
	}
	items = append(items, cur)
	head = bytes.Join(lines[:start+1], nil)
	if !bytes.HasSuffix(head, []byte("\n")) {
		head = append(head, '\n')
	}
	head = append(head, bytes.Join(lines[end:], nil)...)
	return head, items, true
}

// leadingSpaces counts the spaces a line starts with.
func leadingSpaces(l []byte) int {
	n := 0
	for n < len(l) && l[n] == ' ' {
		n++
	}
	return n
}
