package kbdoc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"
)

// Size limits of knowledge-base files, by format.
const (
	// MaxTextBytes bounds text, Markdown and HTML files: 10 MiB.
	MaxTextBytes = 10 << 20
	// MaxBinaryBytes bounds PDF and DOCX files: 50 MiB.
	MaxBinaryBytes = 50 << 20
)

var (
	// ErrUnsupported reports a file that cannot be read as a knowledge-base
	// document; the error's message says why.
	ErrUnsupported = errors.New("unsupported content")
	// ErrTooLarge reports a file over the limit of its format.
	ErrTooLarge = errors.New("too large")
)

// Format is the kind of a knowledge-base file.
type Format string

// The formats Extract reads.
const (
	Text     Format = "text"
	Markdown Format = "markdown"
	HTML     Format = "html"
	PDF      Format = "pdf"
	DOCX     Format = "docx"
)

// MaxBytes returns the size limit of a format: MaxBinaryBytes for PDF and
// DOCX, MaxTextBytes otherwise.
func MaxBytes(f Format) int64 {
	if f == PDF || f == DOCX {
		return MaxBinaryBytes
	}
	return MaxTextBytes
}

// ContentType returns the media type of a format's files.
func ContentType(f Format) string {
	switch f {
	case Markdown:
		return "text/markdown; charset=utf-8"
	case HTML:
		return "text/html; charset=utf-8"
	case PDF:
		return "application/pdf"
	case DOCX:
		return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	}
	return "text/plain; charset=utf-8"
}

// Document is the text of a knowledge-base file, as sections.
type Document struct {
	Format Format `json:"format"`
	// Sections hold the text in order. A section starts at a heading (or at
	// the start of the file, or of a PDF page) and runs to the next.
	Sections []Section `json:"sections"`
	// Pages is the number of pages of a PDF; 0 for other formats.
	Pages int `json:"pages,omitempty"`
	// EmptyPages lists the pages of a PDF that have no text (scanned
	// pages, say), from 1.
	EmptyPages []int `json:"empty_pages,omitempty"`
}

// Section is a part of a document under one heading.
type Section struct {
	// Headings is the heading path, outermost first: ["Install", "Linux"]
	// for a section "Linux" under "Install". Empty before the first
	// heading.
	Headings []string `json:"headings,omitempty"`
	// Page is the PDF page the section is on, from 1; 0 for other formats.
	Page int `json:"page,omitempty"`
	// Offset is the byte offset of Text in the document's Text().
	Offset int `json:"offset"`
	// Text is the section's body: paragraphs separated by a blank line,
	// list items and table rows one per line. It does not repeat the
	// heading.
	Text string `json:"text"`
}

// Text returns the document's text: each heading where it starts, on a
// line of its own, then the sections' bodies, all separated by blank
// lines. Section.Offset indexes into it.
func (d *Document) Text() string {
	var b strings.Builder
	d.render(&b)
	return b.String()
}

// render writes Text to b and sets the sections' offsets.
func (d *Document) render(b *strings.Builder) {
	var prev []string
	for i := range d.Sections {
		s := &d.Sections[i]
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		same := 0
		for same < len(prev) && same < len(s.Headings) && prev[same] == s.Headings[same] {
			same++
		}
		if same == len(s.Headings) && len(prev) > len(s.Headings) && len(s.Headings) > 0 {
			same-- // the same heading again, after a sub-section: say it again
		}
		for _, h := range s.Headings[same:] {
			b.WriteString(h)
			b.WriteString("\n\n")
		}
		prev = s.Headings
		s.Offset = b.Len()
		b.WriteString(s.Text)
	}
}

// Extract reads a knowledge-base file, named name, whose content is data,
// with the default limits: ExtractContext with a background context and
// zero Options. See the package documentation for the formats, what is
// refused and where the extraction runs.
func Extract(name string, data []byte) (*Document, error) {
	return ExtractContext(context.Background(), name, data, Options{})
}

// ExtractContext reads a knowledge-base file within the limits of opts:
// PDF, DOCX and HTML in a child process when RunIfChild was called first
// thing in main (and opts.InProcess is false), else, and for text and
// Markdown, in this process. A cancelled ctx stops it with ctx's error.
func ExtractContext(ctx context.Context, name string, data []byte, opts Options) (*Document, error) {
	f, err := Detect(name, data)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > MaxBytes(f) {
		return nil, fmt.Errorf("a %s file is limited to %d MiB: %w", f, MaxBytes(f)>>20, ErrTooLarge)
	}
	if f != PDF && f != DOCX {
		if err := CheckText(data, false); err != nil {
			return nil, err
		}
	}
	opts = opts.withDefaults()
	start := time.Now()
	var d *Document
	var u Usage
	if sandboxed(f) && !opts.InProcess && hooked.Load() {
		d, u, err = extractChild(ctx, name, f, data, opts)
		if errors.Is(err, errNoChild) {
			// Better bounded in process than not read at all.
			u = Usage{}
			d, err = extractWait(ctx, f, data, opts)
		}
	} else {
		d, err = extractWait(ctx, f, data, opts)
	}
	if opts.Usage != nil {
		u.Elapsed = time.Since(start)
		opts.Usage(u)
	}
	return d, err
}

// sandboxed tells the formats whose readers are run in a child process:
// those whose work or memory is not linear in the file's size.
func sandboxed(f Format) bool { return f == PDF || f == DOCX || f == HTML }

// extractWait extracts in this process, in a goroutine of its own so that
// the call returns by the deadline even when the reader is caught in a
// loop that checks no limit; such a goroutine stops at its next check.
func extractWait(ctx context.Context, f Format, data []byte, o Options) (*Document, error) {
	l := newLimits(ctx, o)
	if !sandboxed(f) {
		return extractLocal(l, f, data)
	}
	type result struct {
		d   *Document
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := extractLocal(l, f, data)
		done <- result{d, err}
	}()
	timer := time.NewTimer(o.Timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.d, r.err
	case <-timer.C:
		l.expired.Store(true)
		return nil, timedOut(o.Timeout)
	case <-ctx.Done():
		l.expired.Store(true)
		return nil, ctx.Err()
	}
}

// extractLocal runs the reader of format f within l.
func extractLocal(l *limits, f Format, data []byte) (d *Document, err error) {
	defer func() {
		if x := recover(); x != nil {
			if lerr, ok := recoverLimit(x); ok {
				d, err = nil, lerr
				return
			}
			d, err = nil, fmt.Errorf("is a damaged or unreadable %s file (%v): %w", f, x, ErrUnsupported)
		}
	}()
	switch f {
	case PDF:
		d, err = extractPDF(l, data)
	case DOCX:
		d, err = extractDOCX(l, data)
	case HTML:
		d, err = extractHTML(l, data)
	case Markdown:
		d = extractMarkdown(l, string(data))
	default:
		d = extractText(l, string(data))
	}
	if l.err != nil {
		return nil, l.err
	}
	if err != nil {
		return nil, err
	}
	d.Format = f
	d.finish()
	return d, nil
}

// finish drops empty sections and sets offsets.
func (d *Document) finish() {
	out := d.Sections[:0]
	for _, s := range d.Sections {
		s.Text = strings.TrimSpace(s.Text)
		if s.Text == "" {
			continue
		}
		out = append(out, s)
	}
	d.Sections = out
	var b strings.Builder
	d.render(&b)
}

// Detect returns the format of a file from its name and the first bytes
// of its content (512 are enough): the rules are in the package
// documentation. A file that is none of the formats gives ErrUnsupported
// with the reason. For text, only the bytes given are checked.
func Detect(name string, head []byte) (Format, error) {
	ext := strings.ToLower(path.Ext(name))
	switch {
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return PDF, nil
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return DOCX, nil
	case ext == ".pdf":
		return "", fmt.Errorf("the name ends in .pdf but the content is not a PDF (it does not start with %%PDF-): %w", ErrUnsupported)
	case ext == ".docx":
		return "", fmt.Errorf("the name ends in .docx but the content is not a zip archive, so not a DOCX: %w", ErrUnsupported)
	}
	if err := CheckText(head, true); err != nil {
		return "", err
	}
	switch ext {
	case ".md", ".markdown":
		return Markdown, nil
	case ".html", ".htm", ".xhtml":
		return HTML, nil
	}
	start := strings.ToLower(strings.TrimSpace(string(head[:min(len(head), 64)])))
	if strings.HasPrefix(start, "<!doctype html") || strings.HasPrefix(start, "<html") {
		return HTML, nil
	}
	return Text, nil
}

// CheckText checks that b is UTF-8 text without NUL bytes; partial allows
// b to end inside a rune (b is the start of a longer content). The error
// wraps ErrUnsupported.
func CheckText(b []byte, partial bool) error {
	if bytes.IndexByte(b, 0) >= 0 {
		return fmt.Errorf("contains a NUL byte, so it is not text, nor a PDF or DOCX: %w", ErrUnsupported)
	}
	if partial {
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	if !utf8.Valid(b) {
		return fmt.Errorf("is not valid UTF-8 text, nor a PDF or DOCX: %w", ErrUnsupported)
	}
	return nil
}

// builder collects sections as a reader walks a document.
type builder struct {
	lim      *limits // counts the text and sections; nil for none
	sections []Section
	path     []string // current heading path
	levels   []int    // heading level of each element of path
	page     int
	cur      strings.Builder
}

// heading starts a section under a heading of level (1 outermost).
func (b *builder) heading(level int, title string) {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		return
	}
	b.flush()
	if b.lim != nil {
		b.lim.addText(len(title) + 2)
	}
	for len(b.levels) > 0 && b.levels[len(b.levels)-1] >= level {
		b.levels = b.levels[:len(b.levels)-1]
		b.path = b.path[:len(b.path)-1]
	}
	b.levels = append(b.levels, level)
	b.path = append(b.path, title)
}

// newPage starts a section on a PDF page.
func (b *builder) newPage(n int) {
	b.flush()
	b.page = n
}

// paragraph adds a paragraph (or list item, or table row: line is true
// for those, which follow the previous one on the next line).
func (b *builder) paragraph(text string, line bool) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if b.lim != nil {
		b.lim.tick()
		b.lim.addText(len(text) + 2)
	}
	if b.cur.Len() > 0 {
		if line {
			b.cur.WriteString("\n")
		} else {
			b.cur.WriteString("\n\n")
		}
	}
	b.cur.WriteString(text)
}

func (b *builder) flush() {
	if strings.TrimSpace(b.cur.String()) == "" {
		// Nothing to keep: a heading with no body of its own (directly
		// followed by a sub-heading) stays in the next section's path.
		b.cur.Reset()
		return
	}
	if b.lim != nil {
		n := 0
		for _, h := range b.path {
			n += len(h)
		}
		b.lim.addSection(n)
	}
	s := Section{Headings: append([]string(nil), b.path...), Page: b.page, Text: b.cur.String()}
	b.sections = append(b.sections, s)
	b.cur.Reset()
}

func (b *builder) document() *Document {
	b.flush()
	return &Document{Sections: b.sections}
}

func extractText(l *limits, s string) *Document {
	s = strings.ReplaceAll(strings.TrimPrefix(s, "\uFEFF"), "\r\n", "\n")
	l.addText(len(s))
	return &Document{Sections: []Section{{Text: s}}}
}
