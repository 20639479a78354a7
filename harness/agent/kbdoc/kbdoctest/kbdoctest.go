// Package kbdoctest writes small PDF and DOCX files for tests of
// knowledge-base extraction: made on the fly, so that no document from
// elsewhere is committed. Only tests import it.
package kbdoctest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"html"
	"strings"

	"github.com/go-pdf/fpdf"
)

// Page is a page of a PDF to write: a heading (set large, empty for none)
// and paragraphs. A page with neither is blank: it has no text.
type Page struct {
	Heading    string
	Paragraphs []string
}

// PDF returns a PDF of the pages, in Helvetica (Latin-1 text only).
func PDF(pages ...Page) []byte { return makePDF(false, pages) }

// EncryptedPDF returns a PDF of the pages encrypted with a user password
// ("secret").
func EncryptedPDF(pages ...Page) []byte { return makePDF(true, pages) }

// ImagePDF returns a PDF of n pages that carry only drawings, as a scan
// carries only images: it has no text layer.
func ImagePDF(n int) []byte {
	f := fpdf.New("P", "mm", "A4", "")
	for i := range n {
		f.AddPage()
		f.SetFillColor(40*i%255, 90, 160)
		f.Rect(20, 20, 120, 80, "F")
	}
	return output(f)
}

func makePDF(encrypt bool, pages []Page) []byte {
	f := fpdf.New("P", "mm", "A4", "")
	if encrypt {
		f.SetProtection(fpdf.CnProtectPrint, "secret", "owner")
	}
	for _, p := range pages {
		f.AddPage()
		if p.Heading != "" {
			f.SetFont("Helvetica", "B", 20)
			f.MultiCell(0, 10, p.Heading, "", "L", false)
			f.Ln(4)
		}
		f.SetFont("Helvetica", "", 11)
		for _, para := range p.Paragraphs {
			f.MultiCell(0, 5, para, "", "L", false)
			f.Ln(5)
		}
	}
	return output(f)
}

func output(f *fpdf.Fpdf) []byte {
	var b bytes.Buffer
	if err := f.Output(&b); err != nil {
		panic(fmt.Sprintf("kbdoctest: write PDF: %v", err))
	}
	return b.Bytes()
}

// Para is a paragraph of a DOCX to write. Style is its style id
// ("Heading1", "Title"…), empty for body text; List makes it a bulleted
// list item; Cells, when set, make it a table row instead.
type Para struct {
	Style string
	Text  string
	List  bool
	Cells []string
}

// DOCX returns a minimal DOCX (a zip with [Content_Types].xml and
// word/document.xml) holding the paragraphs.
func DOCX(paras ...Para) []byte {
	var body strings.Builder
	inTable := false
	for _, p := range paras {
		if p.Cells != nil {
			if !inTable {
				body.WriteString("<w:tbl>")
				inTable = true
			}
			body.WriteString("<w:tr>")
			for _, c := range p.Cells {
				fmt.Fprintf(&body, `<w:tc><w:p><w:r><w:t>%s</w:t></w:r></w:p></w:tc>`, html.EscapeString(c))
			}
			body.WriteString("</w:tr>")
			continue
		}
		if inTable {
			body.WriteString("</w:tbl>")
			inTable = false
		}
		body.WriteString("<w:p>")
		if p.Style != "" || p.List {
			body.WriteString("<w:pPr>")
			if p.Style != "" {
				fmt.Fprintf(&body, `<w:pStyle w:val="%s"/>`, html.EscapeString(p.Style))
			}
			if p.List {
				body.WriteString(`<w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>`)
			}
			body.WriteString("</w:pPr>")
		}
		fmt.Fprintf(&body, `<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, html.EscapeString(p.Text))
	}
	if inTable {
		body.WriteString("</w:tbl>")
	}
	files := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"word/document.xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`,
	}
	return Zip(files)
}

// Zip returns a zip archive of the files (name to content), in name
// order.
func Zip(files map[string]string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	for _, n := range sorted(names) {
		w, err := zw.Create(n)
		if err == nil {
			_, err = w.Write([]byte(files[n]))
		}
		if err != nil {
			panic(fmt.Sprintf("kbdoctest: write zip: %v", err))
		}
	}
	if err := zw.Close(); err != nil {
		panic(fmt.Sprintf("kbdoctest: write zip: %v", err))
	}
	return b.Bytes()
}

func sorted(xs []string) []string {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
	return xs
}
