package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// supportTarget is a target file using every field.
const supportTarget = `id: support
description: The support agent's chat API
url: https://support.example.com/api/chat
method: POST
headers:
  Authorization: Bearer ${SUPPORT_TOKEN}
  X-Client: gauntlet
body:
  messages: '{{messages}}'
  session: '{{conversation_id}}'
  trace: turn of {{conversation_id}}
response:
  answer: /reply/text
  tool_calls: /reply/tool_calls
  sources: /reply/citations
`

func writeDefs(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTargetsLoad: targets/*.yaml are read by a sync into the cache (and
// by Load into memory, and by Check), the ${VAR} references kept as
// written, a pointer alone taken as the answer's, and the files written
// back by an import of the export byte for byte.
func TestTargetsLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "definitions")
	files := map[string]string{
		"targets/support.yaml": supportTarget,
		"targets/bare.yaml":    "id: bare\nurl: http://127.0.0.1:9/chat\nmethod: POST\nbody: '{{prompt}}'\nresponse: /answer\n",
	}
	writeDefs(t, dir, files)
	c, res := openAt(t, dir)
	if len(res.Errors) != 0 || res.Loaded.Targets != 2 {
		t.Fatalf("sync = %+v; want 2 targets, no error", res)
	}
	want := harness.TargetDefinition{
		ID: "support", Description: "The support agent's chat API", URL: "https://support.example.com/api/chat", Method: "POST",
		Headers:  map[string]string{"Authorization": "Bearer ${SUPPORT_TOKEN}", "X-Client": "gauntlet"},
		Body:     map[string]any{"messages": "{{messages}}", "session": "{{conversation_id}}", "trace": "turn of {{conversation_id}}"},
		Response: harness.TargetResponse{Answer: "/reply/text", Sources: "/reply/citations", ToolCalls: "/reply/tool_calls"},
	}
	got, err := c.Target(ctx, "support")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Target(support) = %+v, %v;\nwant %+v", got, err, want)
	}
	list, err := c.Targets(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "bare" || list[1].ID != "support" {
		t.Fatalf("Targets = %+v, %v", list, err)
	}
	if list[0].Response != (harness.TargetResponse{Answer: "/answer"}) || list[0].Body != "{{prompt}}" {
		t.Errorf("bare = %+v", list[0])
	}
	if _, err := c.Target(ctx, "nope"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("Target(nope) = %v; want not found", err)
	}

	// Load reads the same files into memory, with the same answers.
	mfs := fstest.MapFS{}
	for rel, data := range files {
		mfs[rel] = &fstest.MapFile{Data: []byte(data)}
	}
	mem, mres, err := Load(ctx, mfs, LoadOptions{})
	if err != nil || len(mres.Errors) != 0 || mres.Loaded.Targets != 2 {
		t.Fatalf("Load = %+v, %v", mres, err)
	}
	if got, err := mem.Target(ctx, "support"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("loaded Target(support) = %+v, %v", got, err)
	}
	if _, err := mem.Target(ctx, "nope"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("loaded Target(nope) = %v; want not found", err)
	}

	// gauntlet validate counts them.
	chk, err := Check(dir, nil)
	if err != nil || chk.Loaded.Targets != 2 || len(chk.Errors) != 0 {
		t.Errorf("Check = %+v, %v", chk, err)
	}

	// The export carries them; importing it in place rewrites nothing.
	snap, err := c.Export(ctx)
	if err != nil || len(snap.Targets) != 2 {
		t.Fatalf("export targets = %+v, %v", snap.Targets, err)
	}
	before := dirFiles(t, dir)
	if _, err := c.Import(ctx, snap, false); err != nil {
		t.Fatal(err)
	}
	if after := dirFiles(t, dir); !reflect.DeepEqual(after, before) {
		t.Errorf("import of the export changed the files:\n%v\nwas\n%v", after, before)
	}
}

// TestTargetsImport: an import carries targets like tools: merged by id,
// kept when the import has no targets key, all replaced (files removed)
// by a replace that has one; a bad target refuses the whole import.
func TestTargetsImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "definitions")
	writeDefs(t, dir, map[string]string{"targets/support.yaml": supportTarget})
	c, _ := openAt(t, dir)

	other := harness.TargetDefinition{ID: "other", URL: "http://127.0.0.1:9/x", Body: map[string]any{"q": "{{prompt}}"},
		Response: harness.TargetResponse{Answer: "/a"}}
	if _, err := c.Import(ctx, &harness.Snapshot{Targets: []harness.TargetDefinition{other}}, true); err != nil {
		t.Fatal(err)
	}
	got, err := c.Target(ctx, "other")
	if err != nil || got.Method != "POST" || !exists(c, "targets/other.yaml") {
		t.Fatalf("merged target = %+v, %v (file %v)", got, err, exists(c, "targets/other.yaml"))
	}
	if !strings.Contains(readFile(t, c, "targets/other.yaml"), "response: /a\n") {
		t.Errorf("file:\n%s", readFile(t, c, "targets/other.yaml"))
	}

	// A replace without targets keeps them.
	if _, err := c.Import(ctx, &harness.Snapshot{}, false); err != nil {
		t.Fatal(err)
	}
	if ts, _ := c.Targets(ctx); len(ts) != 2 {
		t.Errorf("after a replace without targets: %d targets; want 2", len(ts))
	}
	// A bad one refuses the import, naming its field.
	bad := other
	bad.ID, bad.URL = "bad", "ftp://x/y"
	_, err = c.Import(ctx, &harness.Snapshot{Targets: []harness.TargetDefinition{bad}}, true)
	assertInvalid(t, err, "targets[0].url")
	// A replace with an empty list removes them all, files included.
	if _, err := c.Import(ctx, &harness.Snapshot{Targets: []harness.TargetDefinition{}}, false); err != nil {
		t.Fatal(err)
	}
	if ts, _ := c.Targets(ctx); len(ts) != 0 || exists(c, "targets/support.yaml") || exists(c, "targets/other.yaml") {
		t.Errorf("after a replace with no targets: %+v", ts)
	}
}

// TestTargetFileErrors: a target file that is wrong is reported at its
// line, with the nearest known key or placeholder, and loads nothing;
// the other targets load.
func TestTargetFileErrors(t *testing.T) {
	t.Parallel()
	base := "url: http://127.0.0.1:9/chat\nbody:\n  q: '{{prompt}}'\nresponse: /answer\n"
	cases := []struct {
		name, body string
		line       int
		msg        string
	}{
		{"unknown key", "id: x\nurll: http://a/b\n" + base, 2, `unknown key "urll" (did you mean "url"?)`},
		{"unknown key of response", "url: http://127.0.0.1:9/c\nbody: '{{prompt}}'\nresponse:\n  answr: /a\n", 4, `answr: unknown key (did you mean "answer"?)`},
		{"response neither pointer nor object", "url: http://127.0.0.1:9/c\nbody: '{{prompt}}'\nresponse: [1]\n", 3, "must be a JSON pointer"},
		{"no response", "url: http://127.0.0.1:9/c\nbody: '{{prompt}}'\n", 0, "response: is required"},
		{"pointer without a slash", "url: http://127.0.0.1:9/c\nbody: '{{prompt}}'\nresponse: answer\n", 3, `"answer" is not a JSON pointer`},
		{"pointer with a bad escape", "url: http://127.0.0.1:9/c\nbody: '{{prompt}}'\nresponse:\n  answer: /a~2b\n", 4, `"~" must be followed by 0 or 1`},
		{"ftp URL", "url: ftp://127.0.0.1/c\nbody: '{{prompt}}'\nresponse: /a\n", 1, "must be an http or https URL"},
		{"URL with credentials", "url: http://me:pw@127.0.0.1/c\nbody: '{{prompt}}'\nresponse: /a\n", 1, "holds credentials"},
		{"no URL", "body: '{{prompt}}'\nresponse: /a\n", 0, "url: is required"},
		{"GET", "method: GET\n" + base, 1, "must be one of POST, PUT, PATCH"},
		{"bad header name", "headers:\n  'Bad Header': x\n" + base, 2, `"Bad Header" is not a valid header name`},
		{"literal secret header", "headers:\n  Authorization: Bearer sk-123\n" + base, 2, "carries credentials: take them from an environment variable, as ${AUTHORIZATION}"},
		{"literal API key header", "headers:\n  X-Api-Key: sk-123\n" + base, 2, "carries credentials"},
		{"unterminated variable", "headers:\n  Authorization: Bearer ${TOKEN\n" + base, 2, "${ without its closing }"},
		{"managed header", "headers:\n  Content-Length: '3'\n" + base, 2, "is set by the client itself"},
		{"unknown placeholder", "url: http://127.0.0.1:9/c\nbody:\n  q: '{{promt}}'\nresponse: /a\n", 3, "unknown placeholder {{promt}} (did you mean {{prompt}}?)"},
		{"no prompt nor messages", "url: http://127.0.0.1:9/c\nbody:\n  id: '{{conversation_id}}'\nresponse: /a\n", 2, "names neither {{prompt}} nor {{messages}}"},
		{"no body", "url: http://127.0.0.1:9/c\nresponse: /a\n", 0, "body: is required"},
		{"literal signing secret", base + "signature:\n  header: X-Sig\n  secret: hunter2\n", 7, "must name an environment variable"},
		{"id not the file name", "id: other\n" + base, 1, `"other" does not match the file name "x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "definitions")
			writeDefs(t, dir, map[string]string{"targets/x.yaml": tc.body, "targets/good.yaml": "url: http://127.0.0.1:9/c\nbody: '{{messages}}'\nresponse: /a\n"})
			c, res := openAt(t, dir)
			if res.Loaded.Targets != 1 {
				t.Errorf("loaded %d targets; want the good one", res.Loaded.Targets)
			}
			if len(res.Errors) != 1 {
				t.Fatalf("errors = %+v; want one", res.Errors)
			}
			fe := res.Errors[0]
			if fe.File != "targets/x.yaml" || fe.Line != tc.line || !strings.Contains(fe.Error, tc.msg) {
				t.Errorf("error = %+v; want line %d and %q", fe, tc.line, tc.msg)
			}
			if _, err := c.Target(context.Background(), "x"); !errors.Is(err, harness.ErrNotFound) {
				t.Errorf("the bad target loaded: %v", err)
			}
		})
	}
}
