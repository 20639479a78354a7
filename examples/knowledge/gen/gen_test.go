package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedFilesAreGenerated checks that the PDF and DOCX committed in
// examples/knowledge/kb are what the generator writes today, and that it
// writes the same bytes every time: edit content.go, then run the
// generator again.
func TestCommittedFilesAreGenerated(t *testing.T) {
	first, err := build()
	if err != nil {
		t.Fatal(err)
	}
	again, err := build()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{GuideFile, BillingFile} {
		if !bytes.Equal(first[name], again[name]) {
			t.Errorf("%s: two runs of the generator differ", name)
		}
		committed, err := os.ReadFile(filepath.Join("..", "kb", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, first[name]) {
			t.Errorf("examples/knowledge/kb/%s is not what the generator writes: run go run ./examples/knowledge/gen", name)
		}
	}
}

// TestRunWrites runs the command as a user does, into a directory of its
// own; a bad flag is an error.
func TestRunWrites(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"-dir", dir}); err != nil {
		t.Fatal(err)
	}
	want, err := build()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: written %d bytes (%v), want %d", name, len(got), err, len(b))
		}
	}
	if err := run([]string{"-nope"}); err == nil {
		t.Error("an unknown flag was accepted")
	}
}
