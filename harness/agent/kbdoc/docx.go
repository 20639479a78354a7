package kbdoc

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// extractDOCX reads the paragraphs of word/document.xml: a paragraph with
// a heading style (Heading 1 to 9, Title, or an outline level) starts a
// section, a numbered or bulleted paragraph is a "- " line, a table row a
// line of cells separated by " | ".
func extractDOCX(l *limits, data []byte) (*Document, error) {
	// The entries are counted before the archive is read: reading its
	// directory costs memory by entry.
	if n, ok := zipEntries(data); ok && n > uint64(l.o.MaxObjects) {
		l.tooLarge("is a zip archive of %d entries, more than %d", n, l.o.MaxObjects)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("is not a readable zip archive, so not a DOCX (%v): %w", err, ErrUnsupported)
	}
	l.object(len(zr.File), "zip entries")
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
		if err := readStyles(l, styles, levels); err != nil {
			return nil, err
		}
	}
	rc, err := openPart(l, doc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readDocumentXML(l, rc, levels)
}

// openPart opens a part of a DOCX archive whose decompressed bytes count
// against the limits as they are read.
func openPart(l *limits, f *zip.File) (io.ReadCloser, error) {
	if f.UncompressedSize64 > uint64(l.o.MaxStreamBytes) {
		l.tooLarge("%s decompresses to more than %s", f.Name, size(l.o.MaxStreamBytes))
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("is a damaged DOCX (%v): %w", err, ErrUnsupported)
	}
	return &countingReader{rc: rc, l: l, what: f.Name}, nil
}

// countingReader counts the bytes read from a part.
type countingReader struct {
	rc   io.ReadCloser
	l    *limits
	what string
	n    int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.l.tick()
	n, err := c.rc.Read(p)
	c.n += int64(n)
	c.l.inflated(int64(n), c.n, c.what)
	return n, err
}

func (c *countingReader) Close() error { return c.rc.Close() }

// zipEntries reads the number of entries a zip archive's end record
// declares; false when there is none to read (zip.NewReader then says
// what is wrong).
func zipEntries(data []byte) (uint64, bool) {
	const endLen = 22
	from := max(0, len(data)-endLen-0xffff)
	i := bytes.LastIndex(data[from:], []byte("PK\x05\x06"))
	if i < 0 || from+i+endLen > len(data) {
		return 0, false
	}
	end := from + i
	n := uint64(binary.LittleEndian.Uint16(data[end+10:]))
	// Zip64: a locator just before the end record points to the zip64
	// end record, which holds the count on 8 bytes.
	if loc := end - 20; loc >= 0 && bytes.Equal(data[loc:loc+4], []byte("PK\x06\x07")) {
		off := binary.LittleEndian.Uint64(data[loc+8:])
		if off <= uint64(len(data)-56) && bytes.Equal(data[off:off+4], []byte("PK\x06\x06")) {
			n = max(n, binary.LittleEndian.Uint64(data[off+32:]))
		}
	}
	return n, true
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
func readStyles(l *limits, f *zip.File, levels map[string]int) error {
	rc, err := openPart(l, f)
	if err != nil {
		return err
	}
	defer rc.Close()
	dec := xml.NewDecoder(rc)
	id := ""
	depth := 0
	for {
		tok, err := dec.Token()
		l.tick()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("is a damaged DOCX: word/styles.xml: %v: %w", err, ErrUnsupported)
		}
		if _, ok := tok.(xml.EndElement); ok {
			depth--
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		depth++
		l.depth(depth, "XML elements (word/styles.xml)")
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

func readDocumentXML(l *limits, r io.Reader, levels map[string]int) (*Document, error) {
	dec := xml.NewDecoder(r)
	b := builder{lim: l}
	depth := 0
	cellBytes := 0 // text held in cells of the current row
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
		l.tick()
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			l.depth(depth, "XML elements (word/document.xml)")
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
				cellBytes = 0
			}
		case xml.CharData:
			if inText {
				// Text held before it reaches the document counts too:
				// one paragraph may be the whole bomb.
				l.pendingText(para.Len() + cellBytes + len(t))
				para.Write(t)
			}
		case xml.EndElement:
			depth--
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				text := strings.TrimSpace(para.String())
				switch {
				case tblDeep > 0:
					if text != "" { // empty cells are dropped from the row anyway
						cells = append(cells, text)
						cellBytes += len(text)
					}
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
				cellBytes = 0
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
