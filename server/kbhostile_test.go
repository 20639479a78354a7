package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc/kbdoctest"
)

// TestKBHostileDocuments uploads documents made to exhaust a reader
// through the API: each is refused as a problem whose detail names the
// limit, 413 for what is too large, 415 for what cannot be read, and the
// knowledge base stays empty.
func TestKBHostileDocuments(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("kb", "")
	for _, tc := range []struct {
		name, file string
		data       []byte
		status     int
		reason     string
	}{
		{"pdf stream inflating to 80 MB", "bomb.pdf", kbdoctest.FlateBombPDF(80 << 20), http.StatusRequestEntityTooLarge, "decompresses to more than 64 MiB"},
		{"pdf page tree that refers to itself", "cycle.pdf", kbdoctest.CyclicPDF(), http.StatusUnsupportedMediaType, "page tree refers to itself"},
		{"pdf claiming 2^31 pages", "count.pdf", kbdoctest.CountPDF(1 << 31), http.StatusRequestEntityTooLarge, "2147483648 pages"},
		{"docx of 200 MB of text", "bomb.docx", kbdoctest.BombDOCX(200 << 20), http.StatusRequestEntityTooLarge, "decompresses to more than 64 MiB"},
		{"docx nested 100 000 deep", "deep.docx", kbdoctest.NestedDOCX(100_000), http.StatusUnsupportedMediaType, "levels deep"},
		{"html nested 400 deep", "deep.html", kbdoctest.NestedHTML(400), http.StatusUnsupportedMediaType, "levels deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustProblem(t, e.upload("kb", tc.file, tc.data), tc.status)
			if !strings.Contains(p.Detail, tc.reason) {
				t.Errorf("detail %q does not say %q", p.Detail, tc.reason)
			}
		})
	}
	if files := e.kbList("kb"); len(files) != 0 {
		t.Errorf("files kept: %+v", files)
	}
}
