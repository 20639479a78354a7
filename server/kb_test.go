package server_test

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/server"
)

// multipartFile builds a multipart/form-data body with one file part
// (form name field) and returns it with its content type. The file name
// is sent as given, quoted as RFC 7578 says (backslash and quote escaped).
func multipartFile(t *testing.T, field, filename string, content []byte) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	quote := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, quote(field), quote(filename)))
	h.Set("Content-Type", "application/octet-stream")
	w, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(content)
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// upload posts a multipart upload to an agent's knowledge base.
func (e *testEnv) upload(agentID, filename string, content []byte) *response {
	e.t.Helper()
	body, ct := multipartFile(e.t, "file", filename, content)
	return e.request(http.MethodPost, "/api/agents/"+agentID+"/kb", body, "Content-Type", ct)
}

// kbFile is an entry of a knowledge-base listing.
type kbFile struct {
	Filename string  `json:"filename"`
	Size     int64   `json:"size"`
	Modified float64 `json:"modified"`
}

func (e *testEnv) kbList(agentID string) []kbFile {
	e.t.Helper()
	var body struct {
		Files []kbFile `json:"files"`
	}
	must(e.t, e.get("/api/agents/"+agentID+"/kb"), http.StatusOK).decode(e.t, &body)
	return body.Files
}

func (e *testEnv) kbContent(agentID, filename string) string {
	e.t.Helper()
	var body struct {
		Filename string `json:"filename"`
		Content  string `json:"content"`
	}
	r := must(e.t, e.get("/api/agents/"+agentID+"/kb/"+url.PathEscape(filename)), http.StatusOK)
	if got := sortedKeys(r.object(e.t)); !slices.Equal(got, []string{"content", "filename", "format"}) {
		e.t.Errorf("read answered fields %v, want content, filename and format", got)
	}
	r.decode(e.t, &body)
	if body.Filename != filename {
		e.t.Errorf("filename %q, want %q", body.Filename, filename)
	}
	return body.Content
}

// checkFileRecord checks a {filename, size, modified} record.
func checkFileRecord(t *testing.T, r *response, filename string, size int) {
	t.Helper()
	m := r.object(t)
	if got := sortedKeys(m); !slices.Equal(got, []string{"filename", "modified", "size"}) {
		t.Errorf("fields %v, want filename, modified, size", got)
	}
	if m["filename"] != filename || m["size"] != float64(size) {
		t.Errorf("record %v, want filename %q size %d", m, filename, size)
	}
	checkModified(t, m["modified"])
}

// checkModified checks that a modified value is a decimal epoch of the
// last minute.
func checkModified(t *testing.T, v any) {
	t.Helper()
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("modified %#v is not a number", v)
	}
	at := time.Unix(int64(f), int64((f-math.Floor(f))*1e9))
	if d := time.Since(at); d < -2*time.Second || d > time.Minute {
		t.Errorf("modified %v is %v from now", f, d)
	}
}

func TestKB(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("kb", "")
	const notes = "# Notes\nCafé au lait — 3 €.\n" // multi-byte: size counts bytes
	const csv = "name,qty\napple,3\npear,5\n"

	t.Run("list empty", func(t *testing.T) {
		r := must(t, e.get("/api/agents/kb/kb"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"files":[],"embedding":null}` {
			t.Fatalf("body %s", got)
		}
	})

	t.Run("create by JSON answers 201 with the file", func(t *testing.T) {
		r := must(t, e.post("/api/agents/kb/kb", map[string]any{"filename": "notes.md", "content": notes}), http.StatusCreated)
		checkFileRecord(t, r, "notes.md", len(notes))
		if ct := r.contentType(); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
	})

	t.Run("create by multipart answers 201 with the file", func(t *testing.T) {
		r := must(t, e.upload("kb", "stock.csv", []byte(csv)), http.StatusCreated)
		checkFileRecord(t, r, "stock.csv", len(csv))
		// Other parts are ignored; JSON and text types are text too.
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.WriteField("note", "ignored")
		w, _ := mw.CreateFormFile("file", "data.json")
		w.Write([]byte(`{"a": [1, 2]}`))
		mw.Close()
		must(t, e.request(http.MethodPost, "/api/agents/kb/kb", buf.Bytes(), "Content-Type", mw.FormDataContentType()), http.StatusCreated)
	})

	t.Run("list has sizes in bytes and decimal epochs", func(t *testing.T) {
		r := must(t, e.get("/api/agents/kb/kb"), http.StatusOK)
		files := e.kbList("kb")
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = f.Filename
		}
		if !slices.Equal(names, []string{"data.json", "notes.md", "stock.csv"}) {
			t.Fatalf("files %v", names)
		}
		if files[1].Size != int64(len(notes)) || len(notes) == len([]rune(notes)) {
			t.Errorf("size %d, want %d bytes", files[1].Size, len(notes))
		}
		for _, raw := range r.object(t)["files"].([]any) {
			f := raw.(map[string]any)
			if got := sortedKeys(f); !slices.Equal(got, []string{"filename", "modified", "size"}) {
				t.Errorf("fields %v", got)
			}
			checkModified(t, f["modified"])
		}
		if !strings.Contains(string(r.body), `"modified":`) || strings.Contains(string(r.body), `"modified":"`) {
			t.Errorf("modified is not a bare number: %s", r.body)
		}
	})

	t.Run("read returns filename and content", func(t *testing.T) {
		if got := e.kbContent("kb", "notes.md"); got != notes {
			t.Errorf("content %q, want %q", got, notes)
		}
		if got := e.kbContent("kb", "stock.csv"); got != csv {
			t.Errorf("content %q, want %q", got, csv)
		}
	})

	t.Run("the files are in the agent's directory", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(e.dataDir, "kb", "kb", "notes.md"))
		if err != nil || string(data) != notes {
			t.Fatalf("on disk: %q %v", data, err)
		}
	})

	t.Run("an existing name is 409", func(t *testing.T) {
		mustProblem(t, e.post("/api/agents/kb/kb", map[string]any{"filename": "notes.md", "content": "other"}), http.StatusConflict)
		mustProblem(t, e.upload("kb", "notes.md", []byte("other")), http.StatusConflict)
		if got := e.kbContent("kb", "notes.md"); got != notes {
			t.Errorf("content changed to %q", got)
		}
	})

	t.Run("PUT replaces the content", func(t *testing.T) {
		r := must(t, e.put("/api/agents/kb/kb/notes.md", map[string]any{"content": "New notes."}), http.StatusOK)
		checkFileRecord(t, r, "notes.md", len("New notes."))
		if got := e.kbContent("kb", "notes.md"); got != "New notes." {
			t.Errorf("content %q", got)
		}
		must(t, e.put("/api/agents/kb/kb/notes.md", map[string]any{"content": ""}), http.StatusOK)
		if got := e.kbContent("kb", "notes.md"); got != "" {
			t.Errorf("content %q, want empty", got)
		}
	})

	t.Run("PUT without content is 422, of an unknown file 404", func(t *testing.T) {
		mustProblem(t, e.put("/api/agents/kb/kb/notes.md", map[string]any{}), http.StatusUnprocessableEntity, "body.content")
		mustProblem(t, e.put("/api/agents/kb/kb/missing.md", map[string]any{"content": "x"}), http.StatusNotFound)
		if _, err := os.Stat(filepath.Join(e.dataDir, "kb", "kb", "missing.md")); !os.IsNotExist(err) {
			t.Errorf("PUT of an unknown file created it: %v", err)
		}
	})

	t.Run("JSON create needs filename and content", func(t *testing.T) {
		mustProblem(t, e.post("/api/agents/kb/kb", map[string]any{"content": "x"}), http.StatusUnprocessableEntity, "body.filename")
		mustProblem(t, e.post("/api/agents/kb/kb", map[string]any{"filename": "x.md"}), http.StatusUnprocessableEntity, "body.content")
		mustProblem(t, e.post("/api/agents/kb/kb", rawBody(`{"filename": "x.md", `)), http.StatusBadRequest)
	})

	t.Run("multipart without a file part is 422", func(t *testing.T) {
		body, ct := multipartFile(t, "other", "x.md", []byte("x"))
		mustProblem(t, e.request(http.MethodPost, "/api/agents/kb/kb", body, "Content-Type", ct), http.StatusUnprocessableEntity)
		mustProblem(t, e.request(http.MethodPost, "/api/agents/kb/kb", []byte("garbage"), "Content-Type", "multipart/form-data; boundary=zzz"),
			http.StatusUnprocessableEntity)
	})

	t.Run("delete", func(t *testing.T) {
		r := must(t, e.del("/api/agents/kb/kb/stock.csv"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"success":true}` {
			t.Errorf("body %s", got)
		}
		mustProblem(t, e.get("/api/agents/kb/kb/stock.csv"), http.StatusNotFound)
		mustProblem(t, e.del("/api/agents/kb/kb/stock.csv"), http.StatusNotFound)
		if len(e.kbList("kb")) != 2 {
			t.Errorf("files %v", e.kbList("kb"))
		}
	})

	t.Run("unknown file is 404", func(t *testing.T) {
		mustProblem(t, e.get("/api/agents/kb/kb/nothing.txt"), http.StatusNotFound)
		mustProblem(t, e.del("/api/agents/kb/kb/nothing.txt"), http.StatusNotFound)
	})

	t.Run("unknown agent is 404", func(t *testing.T) {
		mustProblem(t, e.get("/api/agents/ghost/kb"), http.StatusNotFound)
		mustProblem(t, e.get("/api/agents/ghost/kb/notes.md"), http.StatusNotFound)
		mustProblem(t, e.post("/api/agents/ghost/kb", map[string]any{"filename": "a.md", "content": "x"}), http.StatusNotFound)
		mustProblem(t, e.upload("ghost", "a.md", []byte("x")), http.StatusNotFound)
		mustProblem(t, e.put("/api/agents/ghost/kb/notes.md", map[string]any{"content": "x"}), http.StatusNotFound)
		mustProblem(t, e.del("/api/agents/ghost/kb/notes.md"), http.StatusNotFound)
		if _, err := os.Stat(filepath.Join(e.dataDir, "kb", "ghost")); !os.IsNotExist(err) {
			t.Errorf("a directory was made for an unknown agent: %v", err)
		}
	})
}

// treeOf lists every file and directory under root, but the database's.
func treeOf(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(d.Name(), "gauntlet.db") {
			return nil
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestKBTraversal sends file names that try to leave the agent's
// directory, by every route a name takes: a JSON filename, a multipart
// filename, and a path segment.
func TestKBTraversal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	e := startEnvWith(t, root, nil, &agentConfig{})
	e.createAgent("victim", "")
	e.createAgent("other", "")
	must(t, e.post("/api/agents/victim/kb", map[string]any{"filename": "ok.md", "content": "fine"}), http.StatusCreated)
	must(t, e.post("/api/agents/other/kb", map[string]any{"filename": "secret.md", "content": "other's"}), http.StatusCreated)
	before := treeOf(t, root)

	names := []string{
		"../x", "../../x", "../../../../x", "a/b", "..", ".", ".hidden", "a\x00b", `a\b`, `..\x`, "/etc/passwd",
		"../other/secret.md", "x/../../y", "\x01ctl", "a\nb", " lead", strings.Repeat("n", 256), "",
	}
	for _, name := range names {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			// A JSON filename.
			mustProblem(t, e.post("/api/agents/victim/kb", map[string]any{"filename": name, "content": "pwned"}), http.StatusUnprocessableEntity)
			// A multipart filename, as sent (no base name taken).
			if !strings.ContainsAny(name, "\x00\x01\n") {
				mustProblem(t, e.upload("victim", name, []byte("pwned")), http.StatusUnprocessableEntity)
			}
			// A path segment, URL-encoded.
			if name == "" {
				return
			}
			seg := "/api/agents/victim/kb/" + url.PathEscape(name)
			if name == ".." || name == "." {
				seg = "/api/agents/victim/kb/" + strings.ReplaceAll(name, ".", "%2E")
			}
			mustProblem(t, e.put(seg, map[string]any{"content": "pwned"}), http.StatusUnprocessableEntity)
			mustProblem(t, e.get(seg), http.StatusUnprocessableEntity)
			mustProblem(t, e.del(seg), http.StatusUnprocessableEntity)
		})
	}

	t.Run("a NUL in a multipart filename is refused", func(t *testing.T) {
		body, ct := multipartFile(t, "file", "a\x00b", []byte("pwned"))
		r := e.request(http.MethodPost, "/api/agents/victim/kb", body, "Content-Type", ct)
		if r.status != http.StatusUnprocessableEntity && r.status != http.StatusBadRequest {
			t.Fatalf("status %d, want 422 (or 400); %s", r.status, r.body)
		}
	})

	if after := treeOf(t, root); !slices.Equal(after, before) {
		t.Errorf("the tree changed:\nbefore %v\nafter  %v", before, after)
	}
	if got := e.kbContent("other", "secret.md"); got != "other's" {
		t.Errorf("the other agent's file is now %q", got)
	}
	if got := e.kbContent("victim", "ok.md"); got != "fine" {
		t.Errorf("ok.md is now %q", got)
	}
}

// TestKBRefusesNonText sends binary content and wrong content types.
func TestKBRefusesNonText(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("kb", "")
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")
	latin1 := []byte("caf\xe9 cr\xe8me")

	t.Run("binary multipart upload is 415", func(t *testing.T) {
		mustProblem(t, e.upload("kb", "image.png", png), http.StatusUnsupportedMediaType)
		mustProblem(t, e.upload("kb", "latin1.txt", latin1), http.StatusUnsupportedMediaType)
		// A NUL far into the file is found too.
		big := bytes.Repeat([]byte("text "), 100_000)
		big[len(big)-3] = 0
		mustProblem(t, e.upload("kb", "late-nul.txt", big), http.StatusUnsupportedMediaType)
	})

	t.Run("NUL in JSON content is 415", func(t *testing.T) {
		mustProblem(t, e.post("/api/agents/kb/kb", map[string]any{"filename": "nul.txt", "content": "a\x00b"}), http.StatusUnsupportedMediaType)
		must(t, e.post("/api/agents/kb/kb", map[string]any{"filename": "ok.txt", "content": "ok"}), http.StatusCreated)
		mustProblem(t, e.put("/api/agents/kb/kb/ok.txt", map[string]any{"content": "a\x00b"}), http.StatusUnsupportedMediaType)
		if got := e.kbContent("kb", "ok.txt"); got != "ok" {
			t.Errorf("a refused PUT changed the content to %q", got)
		}
	})

	t.Run("other content types are 415", func(t *testing.T) {
		for _, ct := range []string{"application/xml", "application/octet-stream", "image/png"} {
			mustProblem(t, e.request(http.MethodPost, "/api/agents/kb/kb", []byte(`{"filename":"x.md","content":"x"}`), "Content-Type", ct),
				http.StatusUnsupportedMediaType)
		}
	})

	t.Run("nothing was left behind", func(t *testing.T) {
		files := e.kbList("kb")
		if len(files) != 1 || files[0].Filename != "ok.txt" {
			t.Errorf("files %v, want ok.txt only", files)
		}
		entries, err := os.ReadDir(filepath.Join(e.dataDir, "kb", "kb"))
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if en.Name() != "ok.txt" {
				t.Errorf("left in the directory: %s", en.Name())
			}
		}
	})
}

// genReader yields n bytes of 'a' between a prefix and a suffix, counting
// what was read, without holding the body in memory.
type genReader struct {
	prefix, suffix string
	n              int64
	read           atomic.Int64
}

func (g *genReader) size() int64 { return int64(len(g.prefix)) + g.n + int64(len(g.suffix)) }

func (g *genReader) Read(p []byte) (int, error) {
	off := g.read.Load()
	if off >= g.size() {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off < g.size() {
		switch {
		case off < int64(len(g.prefix)):
			c := copy(p[n:], g.prefix[off:])
			n, off = n+c, off+int64(c)
		case off < int64(len(g.prefix))+g.n:
			c := int(min(int64(len(p)-n), int64(len(g.prefix))+g.n-off))
			for i := range c {
				p[n+i] = 'a'
			}
			n, off = n+c, off+int64(c)
		default:
			c := copy(p[n:], g.suffix[off-int64(len(g.prefix))-g.n:])
			n, off = n+c, off+int64(c)
		}
	}
	g.read.Store(off)
	return n, nil
}

// postStream posts a generated body and returns the response and how
// many bytes of the body had been read when it came.
func (e *testEnv) postStream(path, contentType string, g *genReader) (*response, int64) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+path, g)
	if err != nil {
		e.t.Fatal(err)
	}
	req.ContentLength = g.size()
	req.Header.Set("Content-Type", contentType)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	read := g.read.Load()
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return &response{status: res.StatusCode, header: res.Header, body: data}, read
}

// TestKBSizeLimit: a text file of the knowledge base's limit (10 MiB) is
// taken, content over it is a 413, and so is a body over the server's
// limit of an upload, read no further than that limit. Under -short the
// body limit is lowered to 1 MiB (server.Limits), so that the bodies over
// it are small, and the file of exactly 10 MiB is left to the exhaustive
// pass (see fullSizeBodies).
func TestKBSizeLimit(t *testing.T) {
	t.Parallel()
	full := fullSizeBodies()
	var opts []envOption
	// over is a content length over the limit that applies: the text
	// limit, or under -short the lowered body limit.
	over := 10<<20 + 1
	// The bodies are streamed: total bytes, of which the server reads no
	// more than its request limit (a 50 MiB document and a little,
	// whatever the type) and what the sockets buffer before it answers.
	total := int64(256 << 20)
	if !full {
		opts = append(opts, withLimits(server.Limits{UploadBytes: 1 << 20}))
		over = 1<<20 + 1
		total = 64 << 20
	}
	e := newAgentEnv(t, agentConfig{}, opts...)
	e.createAgent("kb", "")

	t.Run("exactly 10 MiB is accepted", func(t *testing.T) {
		if !full {
			t.Skip("a 10 MiB body: the exhaustive pass sends it (see fullSizeBodies)")
		}
		const limit = 10 << 20
		r := must(t, e.upload("kb", "full.txt", bytes.Repeat([]byte("a"), limit)), http.StatusCreated)
		checkFileRecord(t, r, "full.txt", limit)
	})

	t.Run("a multipart upload over the limit is 413", func(t *testing.T) {
		boundary := "b0undary"
		g := &genReader{
			prefix: "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"huge.txt\"\r\n" +
				"Content-Type: text/plain\r\n\r\n",
			n:      total,
			suffix: "\r\n--" + boundary + "--\r\n",
		}
		r, read := e.postStream("/api/agents/kb/kb", "multipart/form-data; boundary="+boundary, g)
		mustProblem(t, r, http.StatusRequestEntityTooLarge)
		if read >= total/2 {
			t.Errorf("the server read %d of %d bytes before answering", read, g.size())
		}
	})

	t.Run("a JSON body over the limit is 413", func(t *testing.T) {
		g := &genReader{prefix: `{"filename": "huge.txt", "content": "`, n: total, suffix: `"}`}
		r, read := e.postStream("/api/agents/kb/kb", "application/json", g)
		mustProblem(t, r, http.StatusRequestEntityTooLarge)
		if read >= total/2 {
			t.Errorf("the server read %d of %d bytes before answering", read, g.size())
		}
	})

	t.Run("JSON content just over the limit is 413", func(t *testing.T) {
		mustProblem(t, e.post("/api/agents/kb/kb", map[string]any{"filename": "over.txt", "content": strings.Repeat("a", over)}),
			http.StatusRequestEntityTooLarge)
	})

	t.Run("a PUT over the limit is 413 and keeps the file", func(t *testing.T) {
		must(t, e.post("/api/agents/kb/kb", map[string]any{"filename": "small.txt", "content": "small"}), http.StatusCreated)
		mustProblem(t, e.put("/api/agents/kb/kb/small.txt", map[string]any{"content": strings.Repeat("a", over)}),
			http.StatusRequestEntityTooLarge)
		if got := e.kbContent("kb", "small.txt"); got != "small" {
			t.Errorf("content %.20q after a refused PUT", got)
		}
	})

	t.Run("nothing was left behind", func(t *testing.T) {
		want := []string{"full.txt", "small.txt"}
		if !full {
			want = want[1:]
		}
		var names []string
		for _, f := range e.kbList("kb") {
			names = append(names, f.Filename)
		}
		if !slices.Equal(names, want) {
			t.Errorf("files %v, want %v", names, want)
		}
		entries, _ := os.ReadDir(filepath.Join(e.dataDir, "kb", "kb"))
		if len(entries) != len(want) {
			var all []string
			for _, en := range entries {
				all = append(all, en.Name())
			}
			t.Errorf("directory holds %v", all)
		}
	})
}

// TestKBEmbeddingStatus: with an embedding model, the knowledge-base list
// carries the progress of the embeddings, which reaches every chunk; an
// unknown agent is a 404.
func TestKBEmbeddingStatus(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{embeddingModel: "embed-test"})
	e.createAgent("kb", "")
	type status struct {
		Model     string  `json:"model"`
		Chunks    int     `json:"chunks"`
		Embedded  int     `json:"embedded"`
		State     string  `json:"state"`
		LastError *string `json:"last_error"`
	}
	list := func() *status {
		t.Helper()
		var body struct {
			Embedding *status `json:"embedding"`
		}
		must(t, e.get("/api/agents/kb/kb"), http.StatusOK).decode(t, &body)
		return body.Embedding
	}
	if st := list(); st == nil || st.Model != "embed-test" || st.Chunks != 0 || st.State != "idle" {
		t.Fatalf("status of an empty base = %+v", st)
	}
	must(t, e.post("/api/agents/kb/kb", map[string]any{"filename": "a.md", "content": "# One\n\nFirst part.\n\n# Two\n\nSecond part."}), http.StatusCreated)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := list()
		if st.Chunks == 2 && st.Embedded == 2 && st.State == "idle" {
			if st.LastError != nil {
				t.Errorf("last_error = %q", *st.LastError)
			}
			break
		}
		if st.State == "failed" || time.Now().After(deadline) {
			t.Fatalf("status = %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := must(t, e.get("/api/agents/kb/kb"), http.StatusOK)
	if got := sortedKeys(r.object(t)["embedding"].(map[string]any)); !slices.Equal(got, []string{"chunks", "embedded", "model", "state"}) {
		t.Errorf("embedding fields %v", got)
	}
	mustProblem(t, e.get("/api/agents/nobody/kb"), http.StatusNotFound)
}
