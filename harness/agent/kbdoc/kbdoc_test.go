package kbdoc_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc/kbdoctest"
)

// section finds the section whose text contains s.
func section(t *testing.T, d *kbdoc.Document, s string) kbdoc.Section {
	t.Helper()
	for _, sec := range d.Sections {
		if strings.Contains(sec.Text, s) {
			return sec
		}
	}
	t.Fatalf("no section holds %q; sections: %+v", s, d.Sections)
	return kbdoc.Section{}
}

func checkOffsets(t *testing.T, d *kbdoc.Document) {
	t.Helper()
	text := d.Text()
	for _, s := range d.Sections {
		if got := text[s.Offset : s.Offset+len(s.Text)]; got != s.Text {
			t.Errorf("section at %d: Text()[offset:] = %q, want %q", s.Offset, got, s.Text)
		}
	}
}

func TestMarkdown(t *testing.T) {
	src := "Intro line.\n\n# Install\n\nRun the installer.\n\n## Linux\n\n- apt install gauntlet\n- or the tarball\n\n```\n# not a heading\n```\n\n## macOS\n\nUse brew.\n\nUsage\n=====\n\nRun it.\n"
	d, err := kbdoc.Extract("guide.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != kbdoc.Markdown {
		t.Errorf("format = %s", d.Format)
	}
	for _, tc := range []struct {
		text string
		path []string
	}{
		{"Intro line.", nil},
		{"Run the installer.", []string{"Install"}},
		{"- apt install gauntlet\n- or the tarball", []string{"Install", "Linux"}},
		{"# not a heading", []string{"Install", "Linux"}},
		{"Use brew.", []string{"Install", "macOS"}},
		{"Run it.", []string{"Usage"}},
	} {
		if s := section(t, d, tc.text); !slices.Equal(s.Headings, tc.path) {
			t.Errorf("%q is under %q, want %q", tc.text, s.Headings, tc.path)
		}
	}
	checkOffsets(t, d)
	if !strings.Contains(d.Text(), "Install\n\nRun the installer.") {
		t.Errorf("Text() lacks the heading: %q", d.Text())
	}
}

func TestHTML(t *testing.T) {
	src := `<!doctype html><html><head><title>FAQ</title><style>body{color:red}</style>
<script>alert("pwned"); document.write("<h1>fake</h1>")</script></head>
<body><!-- a comment with secret --><h1>Refunds</h1><p>Refunds take <b>five</b> days.</p>
<h2>Exceptions</h2><ul><li>Gift cards</li><li>Sale items</li></ul>
<table><tr><th>Plan</th><th>Price</th></tr><tr><td>Pro</td><td>10</td></tr></table>
<script type="module">fetch("/steal")</script><noscript>enable js</noscript>
<p onclick="evil()">Contact <a href="javascript:x()">us</a>.</p></body></html>`
	d, err := kbdoc.Extract("faq.html", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	text := d.Text()
	for _, bad := range []string{"alert", "pwned", "fake", "steal", "secret", "color:red", "enable js", "<", "evil", "javascript"} {
		if strings.Contains(text, bad) {
			t.Errorf("text holds %q: %q", bad, text)
		}
	}
	if s := section(t, d, "Refunds take five days."); !slices.Equal(s.Headings, []string{"Refunds"}) {
		t.Errorf("paragraph under %q", s.Headings)
	}
	s := section(t, d, "- Gift cards\n- Sale items")
	if !slices.Equal(s.Headings, []string{"Refunds", "Exceptions"}) {
		t.Errorf("list under %q", s.Headings)
	}
	if !strings.Contains(s.Text, "Plan | Price\nPro | 10") {
		t.Errorf("table not kept as rows: %q", s.Text)
	}
	section(t, d, "Contact us.")
	checkOffsets(t, d)
	// Sniffed from content when the name says nothing.
	if d, err := kbdoc.Extract("export", []byte("<!DOCTYPE html><p>hi<script>x()</script></p>")); err != nil || d.Format != kbdoc.HTML || d.Text() != "hi" {
		t.Errorf("sniffed HTML = %+v, %v", d, err)
	}
}

func TestPDF(t *testing.T) {
	data := kbdoctest.PDF(
		kbdoctest.Page{Heading: "Shipping policy", Paragraphs: []string{"Orders ship within two days.", "Express costs extra."}},
		kbdoctest.Page{},
		kbdoctest.Page{Heading: "Returns", Paragraphs: []string{"Returns are free for thirty days."}},
	)
	d, err := kbdoc.Extract("policy.pdf", data)
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != kbdoc.PDF || d.Pages != 3 || !slices.Equal(d.EmptyPages, []int{2}) {
		t.Errorf("format %s, pages %d, empty %v; want pdf, 3, [2]", d.Format, d.Pages, d.EmptyPages)
	}
	s := section(t, d, "Orders ship within two days.")
	if s.Page != 1 || !slices.Equal(s.Headings, []string{"Shipping policy"}) {
		t.Errorf("page 1 section: %+v", s)
	}
	if !strings.Contains(s.Text, "Orders ship within two days.\n\nExpress costs extra.") {
		t.Errorf("paragraphs not kept apart: %q", s.Text)
	}
	s = section(t, d, "Returns are free")
	if s.Page != 3 || !slices.Equal(s.Headings, []string{"Returns"}) {
		t.Errorf("page 3 section: %+v", s)
	}
	checkOffsets(t, d)
	// Content wins over the name.
	if d, err := kbdoc.Extract("policy.txt", data); err != nil || d.Format != kbdoc.PDF {
		t.Errorf("a PDF named .txt = %v, %v; want read as PDF", d, err)
	}
}

func TestDOCX(t *testing.T) {
	data := kbdoctest.DOCX(
		kbdoctest.Para{Style: "Title", Text: "Handbook"},
		kbdoctest.Para{Text: "Welcome aboard."},
		kbdoctest.Para{Style: "Heading2", Text: "Holidays"},
		kbdoctest.Para{Text: "You get 25 days.", List: true},
		kbdoctest.Para{Text: "Plus public holidays.", List: true},
		kbdoctest.Para{Cells: []string{"Year", "Days"}},
		kbdoctest.Para{Cells: []string{"1", "25"}},
		kbdoctest.Para{Text: "Ask HR & payroll <early>."},
	)
	d, err := kbdoc.Extract("handbook.docx", data)
	if err != nil {
		t.Fatal(err)
	}
	if s := section(t, d, "Welcome aboard."); !slices.Equal(s.Headings, []string{"Handbook"}) {
		t.Errorf("under %q", s.Headings)
	}
	s := section(t, d, "- You get 25 days.\n- Plus public holidays.")
	if !slices.Equal(s.Headings, []string{"Handbook", "Holidays"}) {
		t.Errorf("list under %q", s.Headings)
	}
	for _, want := range []string{"Year | Days\n1 | 25", "Ask HR & payroll <early>."} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("text lacks %q: %q", want, s.Text)
		}
	}
	checkOffsets(t, d)
}

func TestText(t *testing.T) {
	d, err := kbdoc.Extract("notes.txt", []byte("\uFEFFline one\r\nline two\r\n\r\n# not a heading in text\n"))
	if err != nil || d.Format != kbdoc.Text {
		t.Fatal(d, err)
	}
	if want := "line one\nline two\n\n# not a heading in text"; d.Text() != want {
		t.Errorf("text = %q, want %q", d.Text(), want)
	}
	if d, err := kbdoc.Extract("empty.txt", nil); err != nil || len(d.Sections) != 0 {
		t.Errorf("empty file = %+v, %v", d, err)
	}
}

// TestRefused covers the files that cannot be read: each is
// ErrUnsupported with a reason a user can act on.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		data       []byte
		reason     string
	}{
		{"pdf without text", "scan.pdf", kbdoctest.ImagePDF(2), "no text layer"},
		{"encrypted pdf", "locked.pdf", kbdoctest.EncryptedPDF(kbdoctest.Page{Paragraphs: []string{"secret"}}), "encrypted"},
		{"docx not a zip", "report.docx", []byte("this is plain text, not a zip"), "not a zip"},
		{"docx binary not a zip", "report.docx", []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1 old .doc"), "not a zip"},
		{"zip without document", "archive.docx", kbdoctest.Zip(map[string]string{"a.txt": "hi"}), "without word/document.xml"},
		{"named pdf not a pdf", "fake.pdf", []byte("hello"), "not a PDF"},
		{"damaged pdf", "broken.pdf", []byte("%PDF-1.4\n garbage"), "unreadable PDF"},
		{"png", "image.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "not text"},
		{"invalid utf8", "latin1.txt", []byte("caf\xe9"), "not valid UTF-8"},
		{"broken docx xml", "bad.docx", kbdoctest.Zip(map[string]string{"word/document.xml": "<w:document><w:body><w:p>"}), "damaged DOCX"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := kbdoc.Extract(tc.file, tc.data)
			if !errors.Is(err, kbdoc.ErrUnsupported) {
				t.Fatalf("Extract = %+v, %v; want ErrUnsupported", d, err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not say %q", err, tc.reason)
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	// Each body made in place, with no copy: under the race detector
	// every byte copied costs many times over.
	big := bytes.Repeat([]byte("a"), kbdoc.MaxTextBytes+1)
	if _, err := kbdoc.Extract("big.txt", big); !errors.Is(err, kbdoc.ErrTooLarge) {
		t.Errorf("10 MiB + 1 of text = %v, want ErrTooLarge", err)
	}
	pdf := make([]byte, 9+kbdoc.MaxBinaryBytes+1)
	copy(pdf, "%PDF-1.4\n")
	if _, err := kbdoc.Extract("big.pdf", pdf); !errors.Is(err, kbdoc.ErrTooLarge) {
		t.Errorf("50 MiB + 1 of PDF = %v, want ErrTooLarge", err)
	}
}

// BenchmarkPDF20Pages extracts a 20-page PDF (the target is under a
// second).
func BenchmarkPDF20Pages(b *testing.B) {
	var pages []kbdoctest.Page
	for i := range 20 {
		var paras []string
		for j := range 8 {
			paras = append(paras, fmt.Sprintf("Paragraph %d of page %d: %s", j, i+1, strings.Repeat("the quick brown fox jumps over the lazy dog ", 8)))
		}
		pages = append(pages, kbdoctest.Page{Heading: fmt.Sprintf("Chapter %d", i+1), Paragraphs: paras})
	}
	data := kbdoctest.PDF(pages...)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := kbdoc.Extract("book.pdf", data); err != nil {
			b.Fatal(err)
		}
	}
}
