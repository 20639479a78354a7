package kbdoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ledongthuc/pdf"
)

// extractPDF reads the text layer of a PDF page by page. Rows of text are
// lines; a gap between rows wider than usual starts a paragraph; a row set
// in a font clearly larger than the page's body text is a heading. Pages
// without text are listed in EmptyPages; a PDF with no text at all, or an
// encrypted one, is refused.
func extractPDF(data []byte) (d *Document, err error) {
	defer func() {
		if x := recover(); x != nil {
			d, err = nil, fmt.Errorf("is a damaged or unreadable PDF (%v): %w", x, ErrUnsupported)
		}
	}()
	r, err := pdf.NewReader(pdfHeader{bytes.NewReader(data)}, int64(len(data)))
	if errors.Is(err, pdf.ErrInvalidPassword) {
		return nil, fmt.Errorf("is an encrypted PDF: remove the password and upload it again: %w", ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("is a damaged or unreadable PDF (%v): %w", err, ErrUnsupported)
	}
	if !r.Trailer().Key("Encrypt").IsNull() {
		return nil, fmt.Errorf("is an encrypted PDF: remove the encryption and upload it again: %w", ErrUnsupported)
	}
	n := r.NumPage()
	var b builder
	d = &Document{Pages: n}
	for i := 1; i <= n; i++ {
		b.newPage(i)
		p := r.Page(i)
		var texts []pdf.Text
		if !p.V.IsNull() {
			texts = p.Content().Text
		}
		if !pdfPage(&b, texts) {
			d.EmptyPages = append(d.EmptyPages, i)
		}
	}
	if n == 0 || len(d.EmptyPages) == n {
		return nil, fmt.Errorf("is a PDF with no text layer (%d pages, scanned images perhaps): only PDFs with text can be read: %w", n, ErrUnsupported)
	}
	d.Sections = b.document().Sections
	return d, nil
}

type pdfRow struct {
	y, size float64
	text    string
}

// pdfPage adds a page's text to b and reports whether it had any. Text
// comes in drawing order; a change of baseline starts a row.
func pdfPage(b *builder, texts []pdf.Text) bool {
	var lines []pdfRow
	var cur strings.Builder
	row := pdfRow{}
	end := func() {
		if text := strings.Join(strings.Fields(cur.String()), " "); text != "" {
			row.text = text
			lines = append(lines, row)
		}
		cur.Reset()
	}
	for i, t := range texts {
		if i == 0 || math.Abs(t.Y-row.y) > max(row.size, t.FontSize, 1)*0.5 {
			end()
			row = pdfRow{y: t.Y}
		}
		cur.WriteString(t.S)
		row.size = max(row.size, t.FontSize)
	}
	end()
	if len(lines) == 0 {
		return false
	}
	// The body size is the one most characters are set in. Lines of a
	// paragraph are set at most about 1.5 times that apart (usual leading
	// is 1.2): a wider gap starts a paragraph.
	chars := map[float64]int{}
	for _, l := range lines {
		chars[l.size] += len(l.text)
	}
	body := 0.0
	for size, n := range chars {
		if n > chars[body] || n == chars[body] && size < body {
			body = size
		}
	}
	paraGap := body * 1.6
	var para []string
	flush := func() {
		if len(para) > 0 {
			b.paragraph(strings.Join(para, "\n"), false)
			para = para[:0]
		}
	}
	for i, l := range lines {
		if body > 0 && l.size >= body*1.25 && len(l.text) <= 200 {
			flush()
			level := 1
			if l.size < body*1.6 {
				level = 2
			}
			b.heading(level, l.text)
			continue
		}
		if i > 0 && math.Abs(lines[i-1].y-l.y) > paraGap {
			flush()
		}
		para = append(para, l.text)
	}
	flush()
	return true
}

// pdfHeader shows a PDF 2.0 header as "%PDF-1.7": the reader checks for
// 1.x only, and reads the text of 2.0 files alike.
type pdfHeader struct{ r io.ReaderAt }

func (h pdfHeader) ReadAt(p []byte, off int64) (int, error) {
	n, err := h.r.ReadAt(p, off)
	if off == 0 && n >= 8 && string(p[5:8]) == "2.0" {
		copy(p[5:8], "1.7")
	}
	return n, err
}
