// Package csvsafe writes CSV that is safe to open in a spreadsheet.
//
// A spreadsheet reads a cell that starts with "=", "+", "-" or "@" as a
// formula, and some also after a leading tab or carriage return: a model's
// answer such as =HYPERLINK("http://…/?leak="&A1,"Click") would become a
// live link in the analyst's sheet. Following the OWASP advice on CSV
// injection, such a cell is written with a single quote in front, which
// the spreadsheet shows as text. Programs that want the exact text ask for
// raw cells instead.
//
// Every CSV the project writes goes through this package, so the rule is
// the same everywhere.
package csvsafe

import (
	"encoding/csv"
	"io"
)

// Cell returns s as a spreadsheet-safe cell: with a single quote in front
// when it starts with =, +, -, @, a tab or a carriage return; unchanged
// otherwise.
func Cell(s string) string {
	if Dangerous(s) {
		return "'" + s
	}
	return s
}

// Dangerous reports whether a spreadsheet could read s as a formula: it
// starts with =, +, -, @, a tab or a carriage return.
func Dangerous(s string) bool {
	if s == "" {
		return false
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return true
	}
	return false
}

// Writer is a csv.Writer whose cells are made safe with Cell, unless it
// was made raw.
type Writer struct {
	*csv.Writer
	raw bool
	buf []string
}

// NewWriter returns a Writer writing to w. With raw set, cells are written
// as they are (still quoted as RFC 4180 says).
func NewWriter(w io.Writer, raw bool) *Writer {
	return &Writer{Writer: csv.NewWriter(w), raw: raw}
}

// Write writes one record, each cell made safe unless the Writer is raw.
// record itself is not changed.
func (w *Writer) Write(record []string) error {
	if w.raw {
		return w.Writer.Write(record)
	}
	w.buf = append(w.buf[:0], record...)
	for i, c := range w.buf {
		w.buf[i] = Cell(c)
	}
	return w.Writer.Write(w.buf)
}

// WriteAll writes records, each made safe unless the Writer is raw, and
// flushes.
func (w *Writer) WriteAll(records [][]string) error {
	for _, r := range records {
		if err := w.Write(r); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
