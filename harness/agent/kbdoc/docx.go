package kbdoc

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxDocumentXML bounds the uncompressed word/document.xml (and
// word/styles.xml) read from a DOCX, against zip bombs.
const maxDocumentXML = 256 << 20

// extractDOCX reads the paragraphs of word/document.xml: a paragraph with
// a heading style (Heading 1 to 9, Title, or an outline level) starts a
// section, a numbered or bulleted paragraph is a "- " line, a table row a
// line of cells separated by " | ".
func extractDOCX(data []byte) (*Document, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("is not a readable zip archive, so not a DOCX (%v): %w", err, ErrUnsupported)
	}
	var doc, styles *zip.File
	for _, f := range zr.File {
		switch f.Name {
		case "word/document.xml":
			doc = f
		case "word/styles.xml":
			styles = f
		}
	}
	if doc == nil {
		return nil, fmt.Errorf("is a zip archive without word/document.xml, so not a DOCX: %w", ErrUnsupported)
	}
	levels := map[string]int{}
	if styles != nil {
		if err := readStyles(styles, levels); err != nil {
			return nil, err
		}
	}
	rc, err := doc.Open()
	if err != nil {
		return nil, fmt.Errorf("is a damaged DOCX (%v): %w", err, ErrUnsupported)
	}
	defer rc.Close()
	return readDocumentXML(io.LimitReader(rc, maxDocumentXML), levels)
}

// headingLevel returns the heading level a style id or name means, or 0.
func headingLevel(s string) int {
	l := strings.ToLower(strings.ReplaceAll(s, " ", ""))
	if l == "title" {
		return 1
	}
	if rest, ok := strings.CutPrefix(l, "heading"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= 1 && n <= 9 {
			return n
		}
	}
	return 0
}

// readStyles maps the ids of heading styles to their levels, from their
// names ("heading 1") or outline levels: ids are often localised.
func readStyles(f *zip.File, levels map[string]int) error {
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("is a damaged DOCX (%v): %w", err, ErrUnsupported)
	}
	defer rc.Close()
	dec := xml.NewDecoder(io.LimitReader(rc, maxDocumentXML))
	id := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("is a damaged DOCX: word/styles.xml: %v: %w", err, ErrUnsupported)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "style":
			id = attr(se, "styleId")
			if n := headingLevel(id); n > 0 {
				levels[id] = n
			}
		case "name":
			if n := headingLevel(attr(se, "val")); n > 0 && id != "" {
				levels[id] = n
			}
		case "outlineLvl":
			if n, err := strconv.Atoi(attr(se, "val")); err == nil && id != "" && n < 9 {
				if _, ok := levels[id]; !ok {
					levels[id] = n + 1
				}
			}
		}
	}
}

func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func readDocumentXML(r io.Reader, levels map[string]int) (*Document, error) {
	dec := xml.NewDecoder(r)
	var b builder
	var (
		para    strings.Builder
		level   int  // heading level of the paragraph, 0 for none
		list    bool // the paragraph is a list item
		inText  bool
		tblDeep int
		cells   []string
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("is a damaged DOCX: word/document.xml: %v: %w", err, ErrUnsupported)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "p":
				para.Reset()
				level, list = 0, false
			case "pStyle":
				level = levels[attr(t, "val")]
				if level == 0 {
					level = headingLevel(attr(t, "val"))
				}
				if strings.HasPrefix(strings.ToLower(attr(t, "val")), "list") {
					list = true
				}
			case "outlineLvl":
				if n, err := strconv.Atoi(attr(t, "val")); err == nil && n < 9 && level == 0 {
					level = n + 1
				}
			case "numPr":
				list = true
			case "t":
				inText = true
			case "tab":
				para.WriteString("\t")
			case "br", "cr":
				para.WriteString("\n")
			case "tbl":
				tblDeep++
			case "tr":
				cells = cells[:0]
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				text := strings.TrimSpace(para.String())
				switch {
				case tblDeep > 0:
					cells = append(cells, text)
					continue
				case text == "":
				case level > 0:
					b.heading(level, text)
				case list:
					b.paragraph("- "+text, true)
				default:
					b.paragraph(text, false)
				}
				para.Reset()
			case "tr":
				row := strings.Join(nonEmpty(cells), " | ")
				if row != "" && tblDeep == 1 {
					b.paragraph(row, true)
				}
				cells = cells[:0]
			case "tbl":
				tblDeep--
			}
		}
	}
	return b.document(), nil
}

func nonEmpty(xs []string) []string {
	out := xs[:0:0]
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
