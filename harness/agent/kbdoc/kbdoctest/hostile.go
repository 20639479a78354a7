package kbdoctest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
)

// RawPDF returns a PDF made of the objects given, numbered from 1 in
// order (object 1 must be the document catalog), with a correct
// cross-reference table: the bodies are written as they are, so that a
// test can write any structure, broken or hostile.
func RawPDF(objects ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

// Stream returns the body of a stream object holding data as it is,
// with the extra dictionary entries given ("/Filter /FlateDecode", say).
func Stream(extra string, data []byte) string {
	return fmt.Sprintf("<< /Length %d %s >>\nstream\n%s\nendstream", len(data), extra, data)
}

// Deflate returns data compressed with zlib, as a PDF's FlateDecode
// filter reads it.
func Deflate(data []byte) []byte {
	return zlibOf(run{string(data), 1})
}

// run is a part of a bomb: unit repeated n times.
type run struct {
	unit string
	n    int64
}

// rawDeflate returns a raw deflate stream of the runs. Each run's unit is
// compressed once, on its own, as byte-aligned non-final blocks, and the
// blocks are repeated: a stream of hundreds of megabytes is written in
// milliseconds, without compressing them. A final empty stored block
// ends it.
func rawDeflate(runs ...run) []byte {
	var out bytes.Buffer
	for _, r := range runs {
		var b bytes.Buffer
		fw, _ := flate.NewWriter(&b, flate.BestCompression)
		fw.Write([]byte(r.unit))
		fw.Flush()
		for range r.n {
			out.Write(b.Bytes())
		}
	}
	out.Write([]byte{0x01, 0x00, 0x00, 0xff, 0xff})
	return out.Bytes()
}

// zlibOf wraps the raw deflate stream of the runs as zlib data, its
// Adler-32 checksum computed over the runs.
func zlibOf(runs ...run) []byte {
	const mod = 65521
	a, b := uint64(1), uint64(0)
	for _, r := range runs {
		// The checksum of a unit repeated: over one unit, s1 grows by
		// the unit's byte sum and s2 by len*s1 plus the weighted sum;
		// repeating that n times is done in closed form, modulo mod.
		var sum, weighted uint64
		for i := 0; i < len(r.unit); i++ {
			sum += uint64(r.unit[i])
			weighted += uint64(len(r.unit)-i) * uint64(r.unit[i])
		}
		sum, weighted = sum%mod, weighted%mod
		l, n := uint64(len(r.unit))%mod, uint64(r.n)%mod
		// After k units: a_k = a + k*sum; b_k = b + k*l*a + l*sum*k(k-1)/2 + k*weighted.
		tri := (n * ((uint64(r.n) + mod - 1) % mod) % mod) * ((mod + 1) / 2) % mod
		b = (b + n*l%mod*a + l*sum%mod*tri + n*weighted) % mod
		a = (a + n*sum) % mod
	}
	var out bytes.Buffer
	out.Write([]byte{0x78, 0xda})
	out.Write(rawDeflate(runs...))
	binary.Write(&out, binary.BigEndian, uint32(b<<16|a))
	return out.Bytes()
}

// onePage is the catalog, page tree and font of a one-page PDF whose
// page (object 3) draws the content stream of object 5.
var onePage = []string{
	"<< /Type /Catalog /Pages 2 0 R >>",
	"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
	"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
	"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
}

// FlateBombPDF returns a one-page PDF whose content stream, one
// FlateDecode stream of a few tens of kilobytes, inflates to n bytes:
// text drawing the letter A n times, which a reader that keeps a record
// per character turns into gigabytes.
func FlateBombPDF(n int64) []byte {
	head := "BT /F1 12 Tf 72 712 Td ("
	tail := ") Tj ET"
	const unit = 64 << 10
	body := zlibOf(run{head, 1}, run{strings.Repeat("A", unit), (n - int64(len(head)+len(tail))) / unit}, run{tail, 1})
	return RawPDF(append(onePage[:4:4], Stream("/Filter /FlateDecode", body))...)
}

// CyclicPDF returns a small PDF whose page tree lists itself as its own
// kid.
func CyclicPDF() []byte {
	return RawPDF(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
	)
}

// CountPDF returns a one-page PDF whose page tree claims count pages.
func CountPDF(count int64) []byte {
	objs := append([]string(nil), onePage...)
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [3 0 R] /Count %d >>", count)
	return RawPDF(append(objs, Stream("", []byte("BT /F1 12 Tf 72 712 Td (Hello) Tj ET")))...)
}

// zipOf returns a zip archive of the entries, each deflated as
// rawDeflate does: bombs of hundreds of megabytes are written at once.
func zipOf(entries ...zipEntry) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		raw := rawDeflate(e.runs...)
		crc, size := uint32(0), uint64(0)
		for _, r := range e.runs {
			unit := []byte(r.unit)
			for range r.n {
				crc = crc32.Update(crc, crc32.IEEETable, unit)
			}
			size += uint64(len(r.unit)) * uint64(r.n)
		}
		w, err := zw.CreateRaw(&zip.FileHeader{Name: e.name, Method: zip.Deflate, CRC32: crc,
			CompressedSize64: uint64(len(raw)), UncompressedSize64: size})
		if err == nil {
			_, err = w.Write(raw)
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

type zipEntry struct {
	name string
	runs []run
}

func entry(name string, runs ...run) zipEntry { return zipEntry{name, runs} }

const docxHead = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`

const docxTail = `</w:body></w:document>`

// BombDOCX returns a DOCX whose word/document.xml inflates to about
// textBytes of text: paragraphs of a thousand letters, repeated.
func BombDOCX(textBytes int64) []byte {
	para := "<w:p><w:r><w:t>" + strings.Repeat("a", 1000) + "</w:t></w:r></w:p>"
	return zipOf(entry("word/document.xml", run{docxHead, 1}, run{strings.Repeat(para, 64), textBytes / 64000}, run{docxTail, 1}))
}

// NestedDOCX returns a DOCX whose word/document.xml nests depth
// elements, one in the other, around a word of text.
func NestedDOCX(depth int) []byte {
	xml := docxHead + strings.Repeat("<w:sdt>", depth) + "<w:p><w:r><w:t>deep</w:t></w:r></w:p>" + strings.Repeat("</w:sdt>", depth) + docxTail
	return zipOf(entry("word/document.xml", run{xml, 1}))
}

// ManyEntriesDOCX returns a DOCX holding n empty entries beside its
// word/document.xml.
func ManyEntriesDOCX(n int) []byte {
	entries := []zipEntry{entry("word/document.xml", run{docxHead + "<w:p><w:r><w:t>x</w:t></w:r></w:p>" + docxTail, 1})}
	for i := range n {
		entries = append(entries, entry(fmt.Sprintf("e/%d", i)))
	}
	return zipOf(entries...)
}

// NestedHTML returns an HTML page nesting depth div elements around a
// word of text.
func NestedHTML(depth int) []byte {
	return []byte("<!doctype html><html><body>" + strings.Repeat("<div>", depth) + "deep" + strings.Repeat("</div>", depth) + "</body></html>")
}

// OperandBombPDF returns a one-page PDF whose content stream, n bytes
// once inflated, is operands without an operator ("1 1 1 …"): a reader
// holds them all on its stack, tens of bytes of memory for each two
// bytes of stream.
func OperandBombPDF(n int64) []byte {
	const unit = 64 << 10
	body := zlibOf(run{strings.Repeat("1 ", unit/2), n / unit})
	return RawPDF(append(onePage[:4:4], Stream("/Filter /FlateDecode", body))...)
}
