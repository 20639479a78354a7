package retrieval

import (
	"strings"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
)

// Chunking: each section of a file (the text under one heading) is cut
// into chunks of at most chunkSize bytes on paragraph, then line, then
// sentence, then word boundaries, each chunk repeating up to chunkOverlap
// bytes of the previous one of the same section. No chunk crosses a
// section boundary.
const (
	chunkSize    = 800
	chunkOverlap = 160
)

// headingSep joins the headings of a chunk's heading path.
const headingSep = " > "

// chunk is a part of one section of a knowledge-base file.
type chunk struct {
	file string
	part int // the chunk's number in its file, from 0
	// headings is the heading path of the section, outermost first; nil
	// before the first heading.
	headings []string
	page     int    // the PDF page, from 1; 0 for other formats
	offset   int    // byte offset of text in the document's text
	text     string // a substring of the document's text
}

// path is the chunk's heading path, "Install > Linux"; "" when none.
func (c *chunk) path() string { return strings.Join(c.headings, headingSep) }

// indexed is what is indexed and embedded of a chunk, and given to a
// model: its heading path on a line of its own, then its text.
func (c *chunk) indexed() string {
	if len(c.headings) == 0 {
		return c.text
	}
	return c.path() + "\n\n" + c.text
}

// sections returns the sections of a document with their offsets in
// text, the document's text: those of the extraction, or the whole text
// as one section when the document was made by hand (Doc nil).
func sections(d kb.Document) []kbdoc.Section {
	if d.Doc == nil || len(d.Doc.Sections) == 0 {
		return []kbdoc.Section{{Text: d.Text}}
	}
	return d.Doc.Sections
}

// chunksOf cuts a document into chunks, appending them to out. Chunk
// texts are substrings of d.Text (the sections' own strings are not
// kept); a section whose offset does not match d.Text (a Document whose
// Text and Doc disagree) is taken from the section itself.
func chunksOf(out []chunk, d kb.Document) []chunk {
	part := 0
	for _, s := range sections(d) {
		text, base := s.Text, 0
		if end := s.Offset + len(s.Text); s.Offset >= 0 && end <= len(d.Text) && d.Text[s.Offset:end] == s.Text {
			text, base = d.Text[s.Offset:end], s.Offset
		}
		for _, sp := range chunkSpans(text, chunkSize, chunkOverlap) {
			out = append(out, chunk{file: d.Name, part: part, headings: s.Headings, page: s.Page,
				offset: base + sp.start, text: text[sp.start:sp.end]})
			part++
		}
	}
	return out
}

type span struct{ start, end int }

// chunkSpans cuts text into chunks of at most size bytes, made of whole
// segments (paragraphs; lines of a paragraph too long; sentences of a
// line too long; words of a sentence too long; bytes of a word too long,
// on rune boundaries), each chunk repeating the last segments of the
// previous one up to overlap bytes.
func chunkSpans(text string, size, overlap int) []span {
	segs := segments(text, size)
	var out []span
	for i := 0; i < len(segs); {
		first, last := i, i
		for last+1 < len(segs) && segs[last+1].end-segs[first].start <= size {
			last++
		}
		out = append(out, span{segs[first].start, segs[last].end})
		if last+1 >= len(segs) {
			break
		}
		next := last + 1
		for next-1 > first && segs[last].end-segs[next-1].start <= overlap &&
			segs[last+1].end-segs[next-1].start <= size {
			next--
		}
		i = next
	}
	return out
}

// segments splits text into non-blank pieces of at most size bytes.
func segments(text string, size int) []span {
	var out []span
	for _, p := range splitOn(text, 0, len(text), "\n\n") {
		if p.end-p.start <= size {
			out = append(out, p)
			continue
		}
		for _, l := range splitOn(text, p.start, p.end, "\n") {
			if l.end-l.start <= size {
				out = append(out, l)
				continue
			}
			for _, s := range sentences(text, l) {
				if s.end-s.start <= size {
					out = append(out, s)
					continue
				}
				out = append(out, splitLong(text, s, size)...)
			}
		}
	}
	return out
}

// splitOn splits text[start:end] on sep, trimming blank space around the
// pieces and dropping blank ones.
func splitOn(text string, start, end int, sep string) []span {
	var out []span
	for start < end {
		i := strings.Index(text[start:end], sep)
		stop := end
		if i >= 0 {
			stop = start + i
		}
		if sp, ok := trimSpan(text, start, stop); ok {
			out = append(out, sp)
		}
		if i < 0 {
			break
		}
		start = stop + len(sep)
	}
	return out
}

// sentences splits a line into sentences: each ends after a '.', '!' or
// '?' followed by a space.
func sentences(text string, l span) []span {
	var out []span
	start := l.start
	for i := l.start; i+1 < l.end; i++ {
		switch text[i] {
		case '.', '!', '?':
			if text[i+1] == ' ' {
				if sp, ok := trimSpan(text, start, i+1); ok {
					out = append(out, sp)
				}
				start = i + 1
			}
		}
	}
	if sp, ok := trimSpan(text, start, l.end); ok {
		out = append(out, sp)
	}
	return out
}

func trimSpan(text string, start, end int) (span, bool) {
	for start < end && isSpace(text[start]) {
		start++
	}
	for end > start && isSpace(text[end-1]) {
		end--
	}
	return span{start, end}, start < end
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// splitLong cuts a piece longer than size at the last space before the
// limit, else at a rune boundary.
func splitLong(text string, l span, size int) []span {
	var out []span
	for l.end-l.start > size {
		cut := l.start + size
		if sp := strings.LastIndexByte(text[l.start:cut], ' '); sp > 0 {
			cut = l.start + sp
		} else {
			for cut > l.start && !utf8.RuneStart(text[cut]) {
				cut--
			}
			if cut == l.start {
				cut = l.start + size
			}
		}
		if sp, ok := trimSpan(text, l.start, cut); ok {
			out = append(out, sp)
		}
		l.start = cut
		for l.start < l.end && isSpace(text[l.start]) {
			l.start++
		}
	}
	if sp, ok := trimSpan(text, l.start, l.end); ok {
		out = append(out, sp)
	}
	return out
}
