package kbdoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// extractPDF reads the text layer of a PDF page by page. Rows of text are
// lines; a gap between rows wider than usual starts a paragraph; a row set
// in a font clearly larger than the page's body text is a heading. Pages
// without text are listed in EmptyPages; a PDF with no text at all, or an
// encrypted one, is refused.
//
// The PDF reader is only trusted with parsing objects: the page tree is
// walked here (its claimed page count checked first, nesting bounded, so
// that a tree that refers to itself ends), each stream is measured
// decompressed before it is interpreted, and the text operators are
// interpreted here, into rows, within the text limit.
func extractPDF(l *limits, data []byte) (d *Document, err error) {
	defer func() {
		if x := recover(); x != nil {
			if lerr, ok := recoverLimit(x); ok {
				d, err = nil, lerr
				return
			}
			d, err = nil, fmt.Errorf("is a damaged or unreadable PDF (%v): %w", x, ErrUnsupported)
		}
	}()
	r, err := pdf.NewReader(pdfFile{bytes.NewReader(data), l}, int64(len(data)))
	if l.err != nil {
		return nil, l.err
	}
	if errors.Is(err, pdf.ErrInvalidPassword) {
		return nil, fmt.Errorf("is an encrypted PDF: remove the password and upload it again: %w", ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("is a damaged or unreadable PDF (%v): %w", err, ErrUnsupported)
	}
	if !r.Trailer().Key("Encrypt").IsNull() {
		return nil, fmt.Errorf("is an encrypted PDF: remove the encryption and upload it again: %w", ErrUnsupported)
	}
	root := r.Trailer().Key("Root").Key("Pages")
	if c := root.Key("Count").Int64(); c > int64(l.o.MaxPages) {
		l.tooLarge("is a PDF of %d pages (its page tree says so); at most %d are read", c, l.o.MaxPages)
	}
	pages := pdfPages(l, root)
	n := len(pages)
	b := builder{lim: l}
	d = &Document{Pages: n}
	for i, p := range pages {
		b.newPage(i + 1)
		if !pdfPage(&b, pdfContent(l, p)) {
			d.EmptyPages = append(d.EmptyPages, i+1)
		}
	}
	if n == 0 || len(d.EmptyPages) == n {
		return nil, fmt.Errorf("is a PDF with no text layer (%d pages, scanned images perhaps): only PDFs with text can be read: %w", n, ErrUnsupported)
	}
	d.Sections = b.document().Sections
	return d, nil
}

// pdfLeaf is a page found in the page tree, with the resources it
// inherits.
type pdfLeaf struct {
	v         pdf.Value
	resources pdf.Value
}

// pdfPages walks the page tree from root, depth first, and returns its
// pages in order. Nesting deeper than the limit (a tree that refers to
// itself never ends) is refused, and so are more pages or nodes than the
// limits allow. Resources are inherited down the walk, never looked up
// through /Parent, which may loop too.
func pdfPages(l *limits, root pdf.Value) []pdfLeaf {
	type node struct {
		v         pdf.Value
		resources pdf.Value
		depth     int
	}
	var out []pdfLeaf
	stack := []node{{root, root.Key("Resources"), 0}}
	for len(stack) > 0 {
		nd := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		l.tick()
		l.object(1, "page tree nodes")
		if nd.depth > l.o.MaxDepth {
			l.unsupported("is a PDF whose page tree refers to itself or nests more than %d levels deep", l.o.MaxDepth)
		}
		res := nd.v.Key("Resources")
		if res.IsNull() {
			res = nd.resources
		}
		switch nd.v.Key("Type").Name() {
		case "Pages":
			kids := nd.v.Key("Kids")
			l.object(kids.Len(), "page tree nodes")
			for i := kids.Len() - 1; i >= 0; i-- {
				stack = append(stack, node{kids.Index(i), res, nd.depth + 1})
			}
		case "Page":
			if len(out) == l.o.MaxPages {
				l.tooLarge("is a PDF of more than %d pages", l.o.MaxPages)
			}
			out = append(out, pdfLeaf{nd.v, res})
		}
	}
	return out
}

// pdfFont is a font of a page, read once.
type pdfFont struct {
	enc    pdf.TextEncoding
	first  int
	widths []float64
}

func (f *pdfFont) width(code int) float64 {
	if f == nil || code < f.first || code-f.first >= len(f.widths) {
		return 0
	}
	return f.widths[code-f.first]
}

// pdfStream measures a stream decompressed, within the limits, before it
// is interpreted: the reader's interpreter would hold what it reads.
func pdfStream(l *limits, v pdf.Value, what string) {
	if v.Kind() != pdf.Stream {
		return
	}
	l.object(1, "streams")
	rc := v.Reader()
	defer rc.Close()
	buf := make([]byte, 32<<10)
	var n int64
	for {
		l.tick()
		m, err := rc.Read(buf)
		n += int64(m)
		l.inflated(int64(m), n, what)
		if err == io.EOF {
			return
		}
		if err != nil {
			panic(err)
		}
	}
}

// pdfFontOf reads a font of a page's resources: its encoding (its
// ToUnicode map measured first) and its widths. A font the resources do
// not hold reads as the reader reads it: PDFDocEncoding, no widths.
func pdfFontOf(l *limits, resources pdf.Value, name string) *pdfFont {
	l.object(1, "fonts")
	v := resources.Key("Font").Key(name)
	pdfStream(l, v.Key("ToUnicode"), "a font's ToUnicode map")
	if d := v.Key("Encoding").Key("Differences"); d.Len() > 0 {
		// An encoding maps at most 256 codes; the reader walks the whole
		// array for each character.
		if d.Len() > 1024 {
			l.unsupported("is a PDF with a malformed font encoding (%d differences)", d.Len())
		}
	}
	w := v.Key("Widths")
	l.object(w.Len(), "font widths")
	f := &pdfFont{first: int(v.Key("FirstChar").Int64()), widths: make([]float64, w.Len())}
	for i := range f.widths {
		f.widths[i] = w.Index(i).Float64()
	}
	font := pdf.Font{V: v}
	f.enc = font.Encoder()
	return f
}

type pdfMatrix [3][3]float64

var pdfIdent = pdfMatrix{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}

func (x pdfMatrix) mul(y pdfMatrix) pdfMatrix {
	var z pdfMatrix
	for i := range 3 {
		for j := range 3 {
			for k := range 3 {
				z[i][j] += x[i][k] * y[k][j]
			}
		}
	}
	return z
}

// pdfGState is the part of the graphics state that places text.
type pdfGState struct {
	Tc, Th, Tl, Tfs, Trise float64
	Tf                     *pdfFont
	Tm, Tlm, CTM           pdfMatrix
}

type pdfRow struct {
	y, size float64
	text    string
}

// pdfContent interprets a page's content streams and returns its rows of
// text: a change of baseline starts a row. It follows the text operators
// of the reader's own Page.Content (github.com/ledongthuc/pdf, BSD
// licence), but keeps rows rather than one record per character, and
// checks the limits at every operator and character.
func pdfContent(l *limits, p pdfLeaf) []pdfRow {
	contents := p.v.Key("Contents")
	switch contents.Kind() {
	case pdf.Stream:
		pdfStream(l, contents, "a page's content stream")
	case pdf.Array:
		l.object(contents.Len(), "streams")
		for i := range contents.Len() {
			pdfStream(l, contents.Index(i), "a page's content stream")
		}
	default:
		return nil
	}
	fonts := map[string]*pdfFont{}
	var enc pdf.TextEncoding
	g := pdfGState{Th: 1, CTM: pdfIdent, Tm: pdfIdent, Tlm: pdfIdent}
	var gstack []pdfGState

	var rows []pdfRow
	var cur strings.Builder
	row := pdfRow{}
	started := false
	pageText := 0
	end := func() {
		if text := strings.Join(strings.Fields(cur.String()), " "); text != "" {
			row.text = text
			rows = append(rows, row)
		}
		cur.Reset()
	}
	add := func(y, size float64, ch rune) {
		if !started || math.Abs(y-row.y) > max(row.size, size, 1)*0.5 {
			end()
			row = pdfRow{y: y}
			started = true
		}
		pageText += utf8.RuneLen(ch)
		l.pendingText(pageText)
		cur.WriteRune(ch)
		row.size = max(row.size, size)
	}
	showText := func(s string) {
		l.tick()
		// Each code of at most 4 bytes gives a character: a string too long
		// for the text limit is refused before it is decoded.
		l.pendingText(pageText + len(s)/4)
		if enc == nil {
			enc = nopEncoding{}
		}
		decoded := enc.Decode(s)
		// The characters add at least the decoded bytes: a string past the
		// limit is refused before a character is placed.
		l.pendingText(pageText + len(decoded))
		n := 0
		for _, ch := range decoded {
			l.tick()
			var w0 float64
			if n < len(s) {
				w0 = g.Tf.width(int(s[n]))
			}
			n++
			// The text rendering matrix is [Tfs*Th 0 0; 0 Tfs 0; 0 Trise 1]
			// x Tm x CTM: its font size and baseline, worked out.
			p := g.Tm.mul(g.CTM)
			add(g.Trise*p[1][1]+p[2][1], g.Tfs*g.Th*p[0][0], ch)
			// Tm = [1 0 0; 0 1 0; tx 0 1] x Tm.
			tx := (w0/1000*g.Tfs + g.Tc) * g.Th
			for j := range 3 {
				g.Tm[2][j] += tx * g.Tm[0][j]
			}
		}
	}
	matrixOf := func(args []pdf.Value) pdfMatrix {
		var m pdfMatrix
		for i := range 6 {
			m[i/2][i%2] = args[i].Float64()
		}
		m[2][2] = 1
		return m
	}
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		l.tick()
		n := stk.Len()
		args := make([]pdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "cm":
			if len(args) == 6 {
				g.CTM = matrixOf(args).mul(g.CTM)
			}
		case "q":
			gstack = append(gstack, g)
			l.depth(len(gstack), "graphics states")
		case "Q":
			if k := len(gstack) - 1; k >= 0 {
				g = gstack[k]
				gstack = gstack[:k]
			}
		case "BT":
			g.Tm, g.Tlm = pdfIdent, pdfIdent
		case "T*":
			g.Tlm = pdfMatrix{{1, 0, 0}, {0, 1, 0}, {0, -g.Tl, 1}}.mul(g.Tlm)
			g.Tm = g.Tlm
		case "Tc":
			if len(args) == 1 {
				g.Tc = args[0].Float64()
			}
		case "TD", "Td":
			if len(args) == 2 {
				if op == "TD" {
					g.Tl = -args[1].Float64()
				}
				g.Tlm = pdfMatrix{{1, 0, 0}, {0, 1, 0}, {args[0].Float64(), args[1].Float64(), 1}}.mul(g.Tlm)
				g.Tm = g.Tlm
			}
		case "Tf":
			if len(args) == 2 {
				name := args[0].Name()
				f, ok := fonts[name]
				if !ok {
					f = pdfFontOf(l, p.resources, name)
					fonts[name] = f
				}
				g.Tf, enc = f, f.enc
				g.Tfs = args[1].Float64()
			}
		case "\"", "'", "Tj":
			if op == "\"" {
				if len(args) != 3 {
					return
				}
				g.Tc = args[1].Float64()
				args = args[2:]
			}
			if len(args) != 1 {
				return
			}
			if op != "Tj" {
				g.Tlm = pdfMatrix{{1, 0, 0}, {0, 1, 0}, {0, -g.Tl, 1}}.mul(g.Tlm)
				g.Tm = g.Tlm
			}
			showText(args[0].RawString())
		case "TJ":
			if len(args) != 1 {
				return
			}
			v := args[0]
			for i := range v.Len() {
				x := v.Index(i)
				if x.Kind() == pdf.String {
					showText(x.RawString())
				} else {
					tx := -x.Float64() / 1000 * g.Tfs * g.Th
					g.Tm = pdfMatrix{{1, 0, 0}, {0, 1, 0}, {tx, 0, 1}}.mul(g.Tm)
				}
			}
			showText("\n")
		case "TL":
			if len(args) == 1 {
				g.Tl = args[0].Float64()
			}
		case "Tm":
			if len(args) == 6 {
				g.Tm = matrixOf(args)
				g.Tlm = g.Tm
			}
		case "Ts":
			if len(args) == 1 {
				g.Trise = args[0].Float64()
			}
		case "Tz":
			if len(args) == 1 {
				g.Th = args[0].Float64() / 100
			}
		}
	})
	end()
	return rows
}

// nopEncoding reads bytes as they are, as the reader does for a font
// without an encoding.
type nopEncoding struct{}

func (nopEncoding) Decode(raw string) string { return raw }

// pdfPage adds a page's rows to b and reports whether it had any text.
func pdfPage(b *builder, lines []pdfRow) bool {
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

// pdfFile is the file the reader reads: every read checks the time, so
// that a loop of the reader that reads the file stops at the deadline;
// and a PDF 2.0 header is shown as "%PDF-1.7": the reader checks for 1.x
// only, and reads the text of 2.0 files alike.
type pdfFile struct {
	r *bytes.Reader
	l *limits
}

func (f pdfFile) ReadAt(p []byte, off int64) (int, error) {
	f.l.tick()
	n, err := f.r.ReadAt(p, off)
	if off == 0 && n >= 8 && string(p[5:8]) == "2.0" {
		copy(p[5:8], "1.7")
	}
	return n, err
}
