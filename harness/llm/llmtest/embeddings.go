package llmtest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"unicode"
)

// DefaultEmbeddingDims is the length of the vectors POST /v1/embeddings
// answers with when Options.EmbeddingDims is zero.
const DefaultEmbeddingDims = 256

// maxEmbeddingInputs bounds the texts of one embeddings request, as real
// endpoints do (OpenAI's limit is 2048).
const maxEmbeddingInputs = 2048

// embedStopWords are left out of Embedding's bag of words: words that say
// nothing of what a text is about.
var embedStopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by can do does for from has have how i
		if in into is it its me my no not of on or our so than that the their them then there these
		they this to too was we were what when where which who why will with would you your`) {
		embedStopWords[w] = true
	}
}

// Embedding is the vector the fake endpoint gives text for model: a
// hashed bag of words of dims dimensions, L2-normalised. Each word
// (a run of letters and digits, lower-cased, stop words left out) adds
// ±1 at a position hashed from the model name and the word, and its
// first five letters add ±0.5 at another, so that "install" and
// "installing" are near. Texts that share words are near in cosine
// similarity, texts that share none are near orthogonal, and another
// model name gives unrelated vectors. A text with no word gives the zero
// vector.
func Embedding(model, text string, dims int) []float32 {
	if dims <= 0 {
		dims = DefaultEmbeddingDims
	}
	v := make([]float64, dims)
	add := func(feature string, weight float64) {
		h := fnv.New64a()
		h.Write([]byte(model))
		h.Write([]byte{0})
		h.Write([]byte(feature))
		x := h.Sum64()
		if x>>63 == 1 {
			weight = -weight
		}
		v[x%uint64(dims)] += weight
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if embedStopWords[w] {
			continue
		}
		add("w:"+w, 1)
		if r := []rune(w); len(r) > 5 {
			add("p:"+string(r[:5]), 0.5)
		}
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, dims)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// SetEmbeddingsDown makes POST /v1/embeddings answer 502 (down true) or
// work again (false), as an embedding endpoint that goes away behind its
// proxy and comes back (not a 503: that is a rate limit, waited out).
// Chat completions are not affected.
func (h *Handler) SetEmbeddingsDown(down bool) { h.embeddingsDown.Store(down) }

// serveEmbeddings answers POST /v1/embeddings: {"model", "input",
// "encoding_format"} with input a string or an array of strings, and the
// vectors as JSON numbers ("float", the default) or base64 strings of
// little-endian float32 values ("base64"), as the OpenAI API sends them.
func (h *Handler) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	h.embeddings.Add(1)
	if h.embeddingsDown.Load() {
		writeError(w, http.StatusBadGateway, "server_error", "unavailable", "The embeddings endpoint is down (llmtest).")
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "The body is not valid JSON: "+err.Error())
		return
	}
	if req.Model == "" {
		writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", "missing_required_parameter", "model", "You must provide a model parameter.")
		return
	}
	if h.refuseModel(w, openaiWire{}, req.Model) {
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", "unsupported_value", "encoding_format",
			"encoding_format must be \"float\" or \"base64\".")
		return
	}
	var inputs []string
	var one string
	if err := json.Unmarshal(req.Input, &one); err == nil {
		inputs = []string{one}
	} else if err := json.Unmarshal(req.Input, &inputs); err != nil || len(inputs) == 0 {
		writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "input",
			"input must be a string or a non-empty array of strings.")
		return
	}
	if len(inputs) > maxEmbeddingInputs {
		writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "input",
			fmt.Sprintf("input has %d texts; at most %d are allowed.", len(inputs), maxEmbeddingInputs))
		return
	}
	h.embeddedTexts.Add(int64(len(inputs)))
	type datum struct {
		Object string `json:"object"`
		Index  int    `json:"index"`
		// Embedding is the vector: []float32, or a base64 string of its
		// little-endian float32 values.
		Embedding any `json:"embedding"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []datum `json:"data"`
		Model  string  `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: req.Model, Data: make([]datum, len(inputs))}
	for i, text := range inputs {
		v := Embedding(req.Model, text, h.opts.EmbeddingDims)
		out.Data[i] = datum{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			out.Data[i].Embedding = base64.StdEncoding.EncodeToString(b)
		}
		out.Usage.PromptTokens += CountTokens(text)
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	writeJSON(w, http.StatusOK, out)
}
