package kbdoctest

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"io"
	"strings"
	"testing"
)

// TestBombsAreValid reads the hand-assembled streams back whole: their
// checksums and sizes are right.
func TestBombsAreValid(t *testing.T) {
	want := "head" + strings.Repeat("unit-", 3000) + "tail"
	zr, err := zlib.NewReader(bytes.NewReader(zlibOf(run{"head", 1}, run{"unit-", 3000}, run{"tail", 1})))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || string(got) != want {
		t.Fatalf("zlib: %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	data := zipOf(entry("a", run{"head", 1}, run{"unit-", 3000}, run{"tail", 1}), entry("b"))
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range z.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		if w := []string{want, ""}[i]; err != nil || string(got) != w {
			t.Errorf("zip entry %s: %d bytes, %v; want %d bytes", f.Name, len(got), err, len(w))
		}
	}
}
