package llm

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/gauntlet-eval/gauntlet/harness"
)

var _ harness.Embedder = (*Client)(nil)

// Embed asks the endpoint's POST /embeddings for one vector per text, in
// the order of texts (the answer's indexes are followed, whatever order
// it lists them in). An empty model means the client's default Model.
//
// Vectors are asked for base64-encoded (little-endian float32, as the
// OpenAI API sends them): a tenth of the bytes of JSON numbers and far
// less work to read. An endpoint that answers with JSON numbers anyway is
// understood too; one that refuses the encoding (a 400 or 422) is asked
// again at once for numbers, and from then on this client asks it for
// numbers only.
//
// Failures are retried as those of Chat; an answer that lacks a text's
// vector, or whose vectors differ in length, fails with an error matching
// ErrMalformedResponse. No text gives no vector and no request.
func (c *Client) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	const op = "embeddings"
	if len(texts) == 0 {
		return nil, nil
	}
	if model == "" {
		model = c.opts.Model
	}
	if model == "" {
		return nil, fmt.Errorf("llm: %s: %w", op, harness.Invalid("model", "is required"))
	}
	c.stats.calls.Add(1)
	params := openai.EmbeddingNewParams{
		Model: openai.EmbeddingModel(model),
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
	}
	embed := func(format openai.EmbeddingNewParamsEncodingFormat) ([][]float32, error) {
		params.EncodingFormat = format
		var out [][]float32
		err := c.do(ctx, op, c.opts.Timeout, c.opts.MaxRetries, 0, func(actx context.Context, n int, hres **http.Response) error {
			var wire embeddingsWire
			if _, err := c.embeddings.New(actx, params, append(attemptOptions(n, hres), option.WithResponseBodyInto(&wire))...); err != nil {
				return err
			}
			var err error
			if out, err = wire.vectors(len(texts)); err != nil {
				return malformed(op, *hres, err)
			}
			return nil
		}, nil)
		return out, err
	}
	var out [][]float32
	var err error
	if !c.floatEmbeddings.Load() {
		out, err = embed(openai.EmbeddingNewParamsEncodingFormatBase64)
		var e *Error
		if errors.As(err, &e) && (e.StatusCode == http.StatusBadRequest || e.StatusCode == http.StatusUnprocessableEntity) {
			c.floatEmbeddings.Store(true)
			out, err = embed(openai.EmbeddingNewParamsEncodingFormatFloat)
		}
	} else {
		out, err = embed(openai.EmbeddingNewParamsEncodingFormatFloat)
	}
	if err != nil {
		c.stats.failures.Add(1)
		return nil, err
	}
	return out, nil
}

// embeddingsWire is the part of an embeddings answer Embed reads. Each
// vector is kept raw: a JSON array of numbers, or a base64 string.
type embeddingsWire struct {
	Data []struct {
		Index     int64           `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
}

// vectors puts the answer's vectors in input order, checking that there
// is exactly one per input and that they have one length.
func (w *embeddingsWire) vectors(n int) ([][]float32, error) {
	if len(w.Data) != n {
		return nil, fmt.Errorf("%d vectors for %d inputs", len(w.Data), n)
	}
	out := make([][]float32, n)
	dims := -1
	for _, d := range w.Data {
		if d.Index < 0 || d.Index >= int64(n) || out[d.Index] != nil {
			return nil, fmt.Errorf("vector index %d is out of range or repeated", d.Index)
		}
		v, err := decodeVector(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("vector %d: %w", d.Index, err)
		}
		if len(v) == 0 {
			return nil, fmt.Errorf("vector %d is empty", d.Index)
		}
		if dims >= 0 && len(v) != dims {
			return nil, fmt.Errorf("vector %d has %d dimensions, vector 0 has %d", d.Index, len(v), dims)
		}
		dims = len(v)
		out[d.Index] = v
	}
	return out, nil
}

// decodeVector reads a vector sent as JSON numbers or as a base64 string
// of little-endian float32 values.
func decodeVector(raw json.RawMessage) ([]float32, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("base64: %w", err)
		}
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("%d bytes of base64 are not float32 values", len(b))
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v, nil
	}
	var v []float32
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}
