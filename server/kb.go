package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

type kbHandler struct{ s *Server }

type kbFilePath struct {
	AgentID  string `path:"agent_id" doc:"Agent id."`
	Filename string `path:"filename" doc:"File name: no slash, backslash, '..', leading dot or control character; at most 255 bytes."`
}

type kbListOutput struct {
	Body struct {
		Files []agent.KBFile `json:"files"`
	}
}

type kbFileOutput struct {
	Body agent.KBFile
}

type kbReadOutput struct {
	Body struct {
		Filename string `json:"filename"`
		Content  string `json:"content"`
	}
}

type kbPutInput struct {
	AgentID  string `path:"agent_id" doc:"Agent id."`
	Filename string `path:"filename" doc:"File name."`
	Body     struct {
		Content *string `json:"content,omitempty" doc:"The new content: UTF-8 text, at most 10 MiB. Required."`
	}
}

// maxKBRequestBytes bounds a knowledge-base request body: a 10 MiB file,
// JSON-escaped or in a multipart envelope, fits.
const maxKBRequestBytes = 2*agent.MaxKBFileBytes + 64<<10

func (h *kbHandler) register(api huma.API) {
	tags := []string{"Agent knowledge base"}
	huma.Register(api, huma.Operation{
		OperationID: "list-kb", Method: http.MethodGet, Path: "/api/agents/{agent_id}/kb",
		Summary: "List an agent's knowledge-base files", Tags: tags,
		Description: "size is in bytes; modified is the modification time as a decimal Unix epoch.",
	}, h.list)
	huma.Register(api, huma.Operation{
		OperationID: "read-kb-file", Method: http.MethodGet, Path: "/api/agents/{agent_id}/kb/{filename}",
		Summary: "Read a knowledge-base file", Tags: tags,
	}, h.read)
	huma.Register(api, huma.Operation{
		OperationID: "replace-kb-file", Method: http.MethodPut, Path: "/api/agents/{agent_id}/kb/{filename}",
		Summary: "Replace a knowledge-base file's content", Tags: tags, MaxBodyBytes: maxKBRequestBytes,
	}, h.put)
	huma.Register(api, huma.Operation{
		OperationID: "delete-kb-file", Method: http.MethodDelete, Path: "/api/agents/{agent_id}/kb/{filename}",
		Summary: "Delete a knowledge-base file", Tags: tags,
	}, h.delete)

	// One path takes a multipart upload or a JSON body, streamed with the
	// size limit enforced while reading: a plain handler, documented here.
	h.s.mux.HandleFunc("POST /api/agents/{agent_id}/kb", h.create)
	api.OpenAPI().AddOperation(&huma.Operation{
		OperationID: "create-kb-file", Method: http.MethodPost, Path: "/api/agents/{agent_id}/kb",
		Summary: "Add a knowledge-base file", Tags: tags,
		Description: "multipart/form-data with the file in the part named file, or JSON {filename, content}. " +
			"Text only (UTF-8: also Markdown, CSV, JSON): other content is a 415; over 10 MiB is a 413; an existing name is a 409.",
		Parameters: []*huma.Param{{Name: "agent_id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString}}},
		RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
			"multipart/form-data": {Schema: &huma.Schema{Type: huma.TypeObject, Required: []string{"file"}, Properties: map[string]*huma.Schema{
				// format: binary, set as an extension: with Format set, huma
				// also writes contentMediaType, which its 3.0 downgrade
				// keeps and 3.0 validators refuse.
				"file": {Type: huma.TypeString, Description: "The file; its name is the part's filename.",
					Extensions: map[string]any{"format": "binary"}},
			}}},
			"application/json": {Schema: &huma.Schema{Type: huma.TypeObject, Required: []string{"filename", "content"}, Properties: map[string]*huma.Schema{
				"filename": {Type: huma.TypeString}, "content": {Type: huma.TypeString},
			}}},
		}},
		Responses: map[string]*huma.Response{
			"201": {Description: "The file: {filename, size, modified}", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Type: huma.TypeObject}}}},
			"409": {Description: "A file of that name exists"},
			"413": {Description: "Over 10 MiB"},
			"415": {Description: "Not UTF-8 text, or not multipart or JSON"},
			"422": {Description: "Bad file name"},
		},
	})
}

func (h *kbHandler) list(ctx context.Context, in *agentPath) (*kbListOutput, error) {
	files, err := h.s.opts.Agents.KBList(ctx, in.AgentID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &kbListOutput{}
	out.Body.Files = files
	return out, nil
}

func (h *kbHandler) read(ctx context.Context, in *kbFilePath) (*kbReadOutput, error) {
	f, err := h.s.opts.Agents.KBRead(ctx, in.AgentID, in.Filename)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &kbReadOutput{}
	out.Body.Filename = f.Filename
	if f.Content != nil {
		out.Body.Content = *f.Content
	}
	return out, nil
}

func (h *kbHandler) put(ctx context.Context, in *kbPutInput) (*kbFileOutput, error) {
	if in.Body.Content == nil {
		return nil, h.s.problem(ctx, harness.Invalid("content", "is required"))
	}
	f, err := h.s.opts.Agents.KBWrite(ctx, in.AgentID, in.Filename, strings.NewReader(*in.Body.Content), false)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &kbFileOutput{Body: f}, nil
}

func (h *kbHandler) delete(ctx context.Context, in *kbFilePath) (*ok, error) {
	if err := h.s.opts.Agents.KBDelete(ctx, in.AgentID, in.Filename); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return success(), nil
}

// create stores a new file from a multipart upload or a JSON body.
func (h *kbHandler) create(w http.ResponseWriter, r *http.Request) {
	agentID := r.PathValue("agent_id")
	r.Body = http.MaxBytesReader(w, r.Body, maxKBRequestBytes)
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var (
		f   agent.KBFile
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
				err = agent.ErrTooLarge
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
			f, err = h.s.opts.Agents.KBWrite(r.Context(), agentID, *body.Filename, strings.NewReader(*body.Content), true)
		}
	default:
		writeProblem(w, http.StatusUnsupportedMediaType, "send multipart/form-data (part \"file\") or JSON {filename, content}, not "+mt)
		return
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	jsonEncoder(w).Encode(f)
}

func (h *kbHandler) createMultipart(r *http.Request, agentID string) (agent.KBFile, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return agent.KBFile{}, harness.Invalid("file", "malformed multipart body: %v", err)
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return agent.KBFile{}, harness.Invalid("file", "is required: send the file in a part named \"file\"")
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return agent.KBFile{}, agent.ErrTooLarge
			}
			return agent.KBFile{}, harness.Invalid("file", "malformed multipart body: %v", err)
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
			return agent.KBFile{}, harness.Invalid("filename", "the file part has no filename")
		}
		f, err := h.s.opts.Agents.KBWrite(r.Context(), agentID, name, part, true)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			err = agent.ErrTooLarge
		}
		return f, err
	}
}
