// Command gen writes the binary documents of the sample knowledge base,
// examples/knowledge/kb: the user guide as a PDF (a real text layer,
// titles and headings set larger than the body) and the plans and billing
// policy as a DOCX (headings, bulleted lists and a table, in hand-written
// WordprocessingML). The HTML and Markdown documents beside them are
// written by hand.
//
// The output is the same byte for byte on every run (fixed dates, sorted
// PDF catalogue, zip entries in a fixed order with a fixed time), so the
// committed files can be checked against the generator:
//
//	go run ./examples/knowledge/gen            # from the repository root
//	go run ./examples/knowledge/gen -dir /tmp/kb
package main

//go:generate go run . -dir ../kb

import (
	"archive/zip"
	"bytes"
	"flag"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-pdf/fpdf"
)

// The names of the generated files.
const (
	GuideFile   = "kestrel-user-guide.pdf"
	BillingFile = "kestrel-plans-and-billing.docx"
)

// stamp dates the documents: a fixed time keeps the output reproducible.
var stamp = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// run writes the documents into the directory its -dir flag names.
func run(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	dir := fs.String("dir", filepath.Join("examples", "knowledge", "kb"), "directory to write the documents into")
	if err := fs.Parse(args); err != nil {
		return err
	}
	files, err := build()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	for _, name := range []string{GuideFile, BillingFile} {
		if err := os.WriteFile(filepath.Join(*dir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// build returns the generated documents by file name.
func build() (map[string][]byte, error) {
	pdf, err := guidePDF(guideTitle, guide)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", GuideFile, err)
	}
	docx, err := billingDOCX(billingTitle, billing)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", BillingFile, err)
	}
	return map[string][]byte{GuideFile: pdf, BillingFile: docx}, nil
}

// page is a page of the PDF: a title, then sections.
type page struct {
	Title    string
	Sections []section
}

// section is a heading (none for the text under the title) and its
// paragraphs.
type section struct {
	Heading    string
	Paragraphs []string
}

// guidePDF sets the pages in Helvetica: titles at 20 points, headings at
// 15, body text at 11. The text is ASCII, which the core fonts encode as
// is.
func guidePDF(title string, pages []page) ([]byte, error) {
	f := fpdf.New("P", "mm", "A4", "")
	f.SetCreationDate(stamp)
	f.SetModificationDate(stamp)
	f.SetCatalogSort(true)
	f.SetTitle(title, false)
	f.SetAuthor("Kestrel documentation team", false)
	f.SetProducer("gauntlet examples/knowledge/gen", false)
	f.SetMargins(20, 20, 20)
	for _, p := range pages {
		f.AddPage()
		f.SetFont("Helvetica", "B", 20)
		f.MultiCell(0, 10, p.Title, "", "L", false)
		f.Ln(4)
		for _, s := range p.Sections {
			if s.Heading != "" {
				f.SetFont("Helvetica", "B", 15)
				f.MultiCell(0, 8, s.Heading, "", "L", false)
				f.Ln(2)
			}
			f.SetFont("Helvetica", "", 11)
			for _, text := range s.Paragraphs {
				f.MultiCell(0, 5, text, "", "L", false)
				f.Ln(4)
			}
		}
	}
	var b bytes.Buffer
	if err := f.Output(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// para is a paragraph of the DOCX: Style is a paragraph style id
// ("Title", "Heading1", "Heading2") or "" for body text; List makes it a
// bulleted list item; Cells, when set, make it a table row instead
// (consecutive rows form one table, the first its header).
type para struct {
	Style string
	Text  string
	List  bool
	Cells []string
}

// billingDOCX writes the smallest DOCX a word processor opens: the
// content types, the package relationships, the document, its styles
// (so the headings show as headings) and its numbering (so the list items
// show bullets).
func billingDOCX(title string, paras []para) ([]byte, error) {
	var body strings.Builder
	inTable := false
	for _, p := range paras {
		if p.Cells != nil {
			if !inTable {
				body.WriteString(`<w:tbl><w:tblPr><w:tblStyle w:val="TableGrid"/><w:tblW w:w="0" w:type="auto"/></w:tblPr>`)
				inTable = true
			}
			body.WriteString("<w:tr>")
			for _, c := range p.Cells {
				fmt.Fprintf(&body, `<w:tc><w:p><w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p></w:tc>`, html.EscapeString(c))
			}
			body.WriteString("</w:tr>")
			continue
		}
		if inTable {
			body.WriteString("</w:tbl>")
			inTable = false
		}
		body.WriteString("<w:p>")
		switch {
		case p.List:
			body.WriteString(`<w:pPr><w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr>`)
		case p.Style != "":
			fmt.Fprintf(&body, `<w:pPr><w:pStyle w:val="%s"/></w:pPr>`, html.EscapeString(p.Style))
		}
		fmt.Fprintf(&body, `<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, html.EscapeString(p.Text))
	}
	if inTable {
		body.WriteString("</w:tbl>")
	}
	const w = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	const head = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"
	files := []struct{ name, content string }{
		{"[Content_Types].xml", head + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>` +
			`<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>` +
			`<Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/>` +
			`<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>` +
			`</Types>`},
		{"_rels/.rels", head + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>` +
			`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>` +
			`</Relationships>`},
		{"docProps/core.xml", head + `<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ` +
			`xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">` +
			`<dc:title>` + html.EscapeString(title) + `</dc:title><dc:creator>Kestrel billing team</dc:creator>` +
			`<dcterms:created xsi:type="dcterms:W3CDTF">` + stamp.Format(time.RFC3339) + `</dcterms:created>` +
			`</cp:coreProperties>`},
		{"word/_rels/document.xml.rels", head + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>` +
			`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/>` +
			`</Relationships>`},
		{"word/document.xml", head + `<w:document ` + w + `><w:body>` + body.String() +
			`<w:sectPr><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1134" w:right="1134" w:bottom="1134" w:left="1134" w:header="709" w:footer="709" w:gutter="0"/></w:sectPr>` +
			`</w:body></w:document>`},
		{"word/styles.xml", head + `<w:styles ` + w + `>` +
			`<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:pPr><w:spacing w:after="120"/></w:pPr><w:rPr><w:sz w:val="22"/></w:rPr></w:style>` +
			`<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:rPr><w:b/><w:sz w:val="44"/></w:rPr></w:style>` +
			`<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:pPr><w:keepNext/><w:spacing w:before="240"/><w:outlineLvl w:val="0"/></w:pPr><w:rPr><w:b/><w:sz w:val="32"/></w:rPr></w:style>` +
			`<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/><w:pPr><w:keepNext/><w:spacing w:before="200"/><w:outlineLvl w:val="1"/></w:pPr><w:rPr><w:b/><w:sz w:val="26"/></w:rPr></w:style>` +
			`<w:style w:type="paragraph" w:styleId="ListParagraph"><w:name w:val="List Paragraph"/><w:basedOn w:val="Normal"/><w:pPr><w:ind w:left="720"/></w:pPr></w:style>` +
			`<w:style w:type="table" w:styleId="TableGrid"><w:name w:val="Table Grid"/><w:tblPr><w:tblBorders>` +
			`<w:top w:val="single" w:sz="4" w:space="0" w:color="auto"/><w:left w:val="single" w:sz="4" w:space="0" w:color="auto"/>` +
			`<w:bottom w:val="single" w:sz="4" w:space="0" w:color="auto"/><w:right w:val="single" w:sz="4" w:space="0" w:color="auto"/>` +
			`<w:insideH w:val="single" w:sz="4" w:space="0" w:color="auto"/><w:insideV w:val="single" w:sz="4" w:space="0" w:color="auto"/>` +
			`</w:tblBorders></w:tblPr></w:style>` +
			`</w:styles>`},
		{"word/numbering.xml", head + `<w:numbering ` + w + `>` +
			`<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="bullet"/><w:lvlText w:val="•"/><w:lvlJc w:val="left"/>` +
			`<w:pPr><w:ind w:left="720" w:hanging="360"/></w:pPr></w:lvl></w:abstractNum>` +
			`<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>` +
			`</w:numbering>`},
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, file := range files {
		hw, err := zw.CreateHeader(&zip.FileHeader{Name: file.name, Method: zip.Deflate, Modified: stamp})
		if err != nil {
			return nil, err
		}
		if _, err := hw.Write([]byte(file.content)); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
