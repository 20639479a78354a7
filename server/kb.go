package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
)

// kbStore is what the knowledge-base operations need of the agent
// service.
type kbStore interface {
	List(ctx context.Context, agentID string) ([]kb.File, error)
	Read(ctx context.Context, agentID, name string) (kb.File, error)
	ReadOriginal(ctx context.Context, agentID, name string) (kb.File, []byte, string, error)
	Write(ctx context.Context, agentID, name string, r io.Reader, mustCreate bool) (kb.File, error)
	Delete(ctx context.Context, agentID, name string) error
}

var _ kbStore = (*kb.Store)(nil)

// kbStatus returns the progress of an agent's knowledge-base
// embeddings; nil when no embedding model is configured
// (agent.Service.KBStatus).
type kbStatus func(ctx context.Context, agentID string) (*retrieval.Status, error)

type kbHandler struct {
	problems
	kb     kbStore
	status kbStatus
}

// apiKBFile is a knowledge-base file's entry.
type apiKBFile struct {
	Filename string  `json:"filename"`
	Size     int64   `json:"size" doc:"Size in bytes."`
	Modified float64 `json:"modified" doc:"Modification time, seconds since the Unix epoch."`
}

func toAPIKBFile(f kb.File) apiKBFile {
	return apiKBFile{Filename: f.Filename, Size: f.Size, Modified: f.Modified}
}

// apiKBFileList is the answer of list-kb.
type apiKBFileList struct {
	Files []apiKBFile `json:"files" doc:"Ordered by name."`
	// Embedding is null when no embedding model is configured.
	Embedding orNull[apiKBEmbedding] `json:"embedding" doc:"Progress of the knowledge base's embeddings for the configured embedding model; null when none is configured (retrieval is BM25 only)."`
}

// apiKBEmbedding is the progress of a knowledge base's embeddings.
type apiKBEmbedding struct {
	Model     string `json:"model" doc:"The embedding model."`
	Chunks    int    `json:"chunks" doc:"Chunks of the knowledge base."`
	Embedded  int    `json:"embedded" doc:"Chunks with a vector of the model: retrieval is hybrid once every chunk has one, BM25 before."`
	State     string `json:"state" enum:"idle,embedding,failed" doc:"idle: nothing to do; embedding: in progress or queued; failed: the last attempt failed (last_error), tried again on a later use or change."`
	LastError string `json:"last_error,omitempty" doc:"Why the last attempt failed."`
}

// apiKBFileContent is the answer of read-kb-file.
type apiKBFileContent struct {
	Filename   string `json:"filename"`
	Content    string `json:"content" doc:"The file's text: the file itself for text and Markdown, the text extracted at upload for HTML, PDF and DOCX."`
	Format     string `json:"format,omitempty" doc:"How the file was read: text, markdown, html, pdf or docx."`
	EmptyPages []int  `json:"empty_pages,omitempty" doc:"Pages of a PDF without text (scanned pages, say), from 1."`
}

type kbReadInput struct {
	AgentID  string `path:"agent_id" doc:"Agent id."`
	Filename string `path:"filename" doc:"File name: no slash, backslash, '..', leading dot or control character; at most 255 bytes."`
	Raw      bool   `query:"raw" doc:"true: the file as uploaded (a PDF's or DOCX's bytes, say) with its media type, instead of the JSON text."`
}

// apiKBFileCreate is the JSON body of create-kb-file.
type apiKBFileCreate struct {
	Filename string `json:"filename,omitempty" api:"required" doc:"A plain name: no slash, backslash, '..', leading dot or control character; at most 255 bytes."`
	Content  string `json:"content,omitempty" api:"required" doc:"UTF-8 text, at most 10 MiB."`
}

// apiKBFileUpdate is the body of replace-kb-file.
type apiKBFileUpdate struct {
	Content *string `json:"content,omitempty" api:"required" doc:"The new content: UTF-8 text, at most 10 MiB."`
}

type kbFilePath struct {
	AgentID  string `path:"agent_id" doc:"Agent id."`
	Filename string `path:"filename" doc:"File name: no slash, backslash, '..', leading dot or control character; at most 255 bytes."`
}

type kbListOutput struct {
	Body apiKBFileList
}

type kbFileOutput struct {
	Body apiKBFile
}

type kbReadOutput struct {
	ContentType string `header:"Content-Type"`
	// With ?raw=true: a download, never a page that runs in the API's
	// origin (an uploaded HTML file's scripts stay inert).
	Disposition string `header:"Content-Disposition"`
	CSP         string `header:"Content-Security-Policy"`
	NoSniff     string `header:"X-Content-Type-Options"`
	// Body is an apiKBFileContent, or the original bytes with ?raw=true.
	Body any
}

type kbPutInput struct {
	AgentID  string `path:"agent_id" doc:"Agent id."`
	Filename string `path:"filename" doc:"File name."`
	Body     apiKBFileUpdate
}

// maxKBRequestBytes bounds a knowledge-base request body: a 50 MiB PDF or
// DOCX in a multipart envelope, or 10 MiB of text JSON-escaped, fits. The
// store enforces each format's own limit as it reads.
const maxKBRequestBytes = kb.MaxDocumentBytes + 64<<10

// registerKB registers the knowledge-base operations. The upload is a
// plain handler on mux, documented here.
func registerKB(api huma.API, mux *http.ServeMux, kb kbStore, status kbStatus, log *slog.Logger) {
	h := &kbHandler{problems{log}, kb, status}
	tags := []string{tagKB}
	register(api, huma.Operation{
		OperationID: "list-kb", Method: http.MethodGet, Path: "/api/agents/{agent_id}/kb",
		Summary: "List an agent's knowledge-base files", Tags: tags,
		Description: "size is in bytes; modified is the modification time as a decimal Unix epoch. " +
			"embedding is the progress of the chunks' embeddings when an embedding model is configured (null otherwise); asking starts them when some chunks lack a vector. 404 for an unknown agent.",
		Errors: []int{http.StatusNotFound},
	}, h.list)
	register(api, huma.Operation{
		OperationID: "read-kb-file", Method: http.MethodGet, Path: "/api/agents/{agent_id}/kb/{filename}",
		Summary: "Read a knowledge-base file", Tags: tags,
		Description: "JSON {filename, content, format, empty_pages}: content is the text (extracted at upload for HTML, PDF and DOCX). " +
			"With raw=true, the file as uploaded with its media type. 404 for an unknown agent or file; 422 for a file name that is not a plain name.",
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
		Responses: map[string]*huma.Response{
			"200": {Description: "The file's text, or with raw=true its bytes.", Content: map[string]*huma.MediaType{
				"application/json": {Schema: api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[apiKBFileContent](), true, "")},
				"text/plain":       rawKBMedia(),
				"text/markdown":    rawKBMedia(),
				"text/html":        rawKBMedia(),
				"application/pdf":  rawKBMedia(),
				"application/vnd.openxmlformats-officedocument.wordprocessingml.document": rawKBMedia(),
				"application/octet-stream": rawKBMedia(),
			}},
		},
	}, h.read)
	register(api, huma.Operation{
		OperationID: "replace-kb-file", Method: http.MethodPut, Path: "/api/agents/{agent_id}/kb/{filename}",
		Summary: "Replace a knowledge-base file's content", Tags: tags, MaxBodyBytes: maxKBRequestBytes,
		Description: "Creates the file when it does not exist. Text only (UTF-8; upload a PDF or DOCX with POST): other content is a 415; over 10 MiB is a 413.",
		Errors:      []int{http.StatusNotFound},
	}, h.put)
	register(api, huma.Operation{
		OperationID: "delete-kb-file", Method: http.MethodDelete, Path: "/api/agents/{agent_id}/kb/{filename}",
		Summary: "Delete a knowledge-base file", Tags: tags,
		Description: "404 for an unknown agent or file; 422 for a file name that is not a plain name.",
		Errors:      []int{http.StatusNotFound, http.StatusUnprocessableEntity},
	}, h.delete)

	// One path takes a multipart upload or a JSON body, streamed with the
	// size limit enforced while reading: a plain handler, documented here.
	mux.HandleFunc("POST /api/agents/{agent_id}/kb", h.create)
	reg := api.OpenAPI().Components.Schemas
	addOperation(api, &huma.Operation{
		OperationID: "create-kb-file", Method: http.MethodPost, Path: "/api/agents/{agent_id}/kb",
		Summary: "Add a knowledge-base file", Tags: tags,
		Description: "multipart/form-data with the file in the part named file, or JSON {filename, content} for text. " +
			"UTF-8 text (also Markdown, CSV, JSON), HTML, PDF with a text layer, DOCX; the text is extracted once, here. " +
			"The format comes from the content for PDF and zip (DOCX) files, from the name for text (.md Markdown, .html HTML). " +
			"Over 10 MiB (50 MiB for PDF and DOCX) is a 413; anything else, a PDF without text, an encrypted PDF or a DOCX that is not a zip " +
			"is a 415 whose detail says why; an existing name is a 409; a bad file name is a 422.",
		Parameters: []*huma.Param{{Name: "agent_id", In: "path", Required: true, Description: "Agent id.", Schema: &huma.Schema{Type: huma.TypeString}}},
		RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
			"multipart/form-data": {Schema: &huma.Schema{Type: huma.TypeObject, Required: []string{"file"}, Properties: map[string]*huma.Schema{
				// format: binary, set as an extension: with Format set, huma
				// also writes contentMediaType, which its 3.0 downgrade
				// keeps and 3.0 validators refuse.
				"file": {Type: huma.TypeString, Description: "The file; its name is the part's filename.",
					Extensions: map[string]any{"format": "binary"}},
			}}},
			"application/json": {Schema: reg.Schema(reflect.TypeFor[apiKBFileCreate](), true, "")},
		}},
		Responses: map[string]*huma.Response{
			"201": {Description: "The file's entry.", Content: map[string]*huma.MediaType{
				"application/json": {Schema: reg.Schema(reflect.TypeFor[apiKBFile](), true, "")},
			}},
		},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge,
			http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity},
	})
}

func (h *kbHandler) list(ctx context.Context, in *agentPath) (*kbListOutput, error) {
	files, err := h.kb.List(ctx, in.AgentID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	out := &kbListOutput{Body: apiKBFileList{Files: make([]apiKBFile, len(files))}}
	for i, f := range files {
		out.Body.Files[i] = toAPIKBFile(f)
	}
	if h.status != nil {
		st, err := h.status(ctx, in.AgentID)
		if err != nil {
			return nil, h.problem(ctx, err)
		}
		if st != nil {
			out.Body.Embedding.V = &apiKBEmbedding{Model: st.Model, Chunks: st.Chunks, Embedded: st.Embedded,
				State: st.State, LastError: st.LastError}
		}
	}
	return out, nil
}

// rawKBMedia describes a file's bytes as uploaded.
func rawKBMedia() *huma.MediaType {
	return &huma.MediaType{Schema: &huma.Schema{Type: huma.TypeString, Extensions: map[string]any{"format": "binary"}}}
}

func (h *kbHandler) read(ctx context.Context, in *kbReadInput) (*kbReadOutput, error) {
	if in.Raw {
		_, data, ct, err := h.kb.ReadOriginal(ctx, in.AgentID, in.Filename)
		if err != nil {
			return nil, h.problem(ctx, err)
		}
		return &kbReadOutput{ContentType: ct, Body: data, NoSniff: "nosniff", CSP: "sandbox",
			Disposition: mime.FormatMediaType("attachment", map[string]string{"filename": in.Filename})}, nil
	}
	f, err := h.kb.Read(ctx, in.AgentID, in.Filename)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	body := apiKBFileContent{Filename: f.Filename, Format: string(f.Format), EmptyPages: f.EmptyPages}
	if f.Content != nil {
		body.Content = *f.Content
	}
	return &kbReadOutput{ContentType: "application/json", Body: body}, nil
}

func (h *kbHandler) put(ctx context.Context, in *kbPutInput) (*kbFileOutput, error) {
	if in.Body.Content == nil {
		return nil, h.problem(ctx, harness.Invalid("content", "is required"))
	}
	f, err := h.kb.Write(ctx, in.AgentID, in.Filename, strings.NewReader(*in.Body.Content), false)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &kbFileOutput{Body: toAPIKBFile(f)}, nil
}

func (h *kbHandler) delete(ctx context.Context, in *kbFilePath) (*successOutput, error) {
	if err := h.kb.Delete(ctx, in.AgentID, in.Filename); err != nil {
		return nil, h.problem(ctx, err)
	}
	return success(), nil
}

// create stores a new file from a multipart upload or a JSON body.
func (h *kbHandler) create(w http.ResponseWriter, r *http.Request) {
	agentID := r.PathValue("agent_id")
	r.Body = http.MaxBytesReader(w, r.Body, maxKBRequestBytes)
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var (
		f   kb.File
		err error
	)
	switch mt {
	case "multipart/form-data":
		f, err = h.createMultipart(r, agentID)
	case "application/json", "":
		var body struct {
			Filename *string `json:"filename"`
			Content  *string `json:"content"`
		}
		if derr := json.NewDecoder(r.Body).Decode(&body); derr != nil {
			var tooBig *http.MaxBytesError
			if errors.As(derr, &tooBig) {
				err = kb.ErrTooLarge
			} else {
				writeProblem(w, http.StatusBadRequest, "malformed JSON: "+derr.Error())
				return
			}
			break
		}
		ve := &harness.ValidationError{}
		if body.Filename == nil {
			ve.Add("filename", "is required")
		}
		if body.Content == nil {
			ve.Add("content", "is required")
		}
		if err = ve.Err(); err == nil {
			f, err = h.kb.Write(r.Context(), agentID, *body.Filename, strings.NewReader(*body.Content), true)
		}
	default:
		writeProblem(w, http.StatusUnsupportedMediaType, "send multipart/form-data (part \"file\") or JSON {filename, content}, not "+mt)
		return
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	jsonEncoder(w).Encode(toAPIKBFile(f))
}

func (h *kbHandler) createMultipart(r *http.Request, agentID string) (kb.File, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return kb.File{}, harness.Invalid("file", "malformed multipart body: %v", err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return kb.File{}, harness.Invalid("file", "is required: send the file in a part named \"file\"")
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return kb.File{}, kb.ErrTooLarge
			}
			return kb.File{}, harness.Invalid("file", "malformed multipart body: %v", err)
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		// The name as sent: part.FileName() would take its base name and
		// hide a traversal attempt, which must be refused, not rewritten.
		_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		name := params["filename"]
		if name == "" {
			return kb.File{}, harness.Invalid("filename", "the file part has no filename")
		}
		f, err := h.kb.Write(r.Context(), agentID, name, part, true)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			err = kb.ErrTooLarge
		}
		return f, err
	}
}
