package llm

import (
	"context"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3"

	"github.com/gauntlet-eval/gauntlet/harness"
)

var _ harness.Embedder = (*Client)(nil)

// Embed asks the endpoint's POST /embeddings for one vector per text, in
// the order of texts (the answer's indexes are followed, whatever order
// it lists them in). An empty model means the client's default Model.
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
		Model:          openai.EmbeddingModel(model),
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	}
	var out [][]float32
	err := c.do(ctx, op, c.opts.Timeout, c.opts.MaxRetries, func(actx context.Context, n int, hres **http.Response) error {
		res, err := c.embeddings.New(actx, params, attemptOptions(n, hres)...)
		if err != nil {
			return err
		}
		out, err = vectors(res, len(texts))
		if err != nil {
			return malformed(op, *hres, err)
		}
		return nil
	}, nil)
	if err != nil {
		c.stats.failures.Add(1)
		return nil, err
	}
	return out, nil
}

// vectors puts an embeddings answer's vectors in input order, checking
// that there is exactly one per input and that they have one length.
func vectors(res *openai.CreateEmbeddingResponse, n int) ([][]float32, error) {
	if res == nil || len(res.Data) != n {
		got := 0
		if res != nil {
			got = len(res.Data)
		}
		return nil, fmt.Errorf("%d vectors for %d inputs", got, n)
	}
	out := make([][]float32, n)
	dims := -1
	for _, d := range res.Data {
		if d.Index < 0 || d.Index >= int64(n) || out[d.Index] != nil {
			return nil, fmt.Errorf("vector index %d is out of range or repeated", d.Index)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("vector %d is empty", d.Index)
		}
		if dims >= 0 && len(d.Embedding) != dims {
			return nil, fmt.Errorf("vector %d has %d dimensions, vector 0 has %d", d.Index, len(d.Embedding), dims)
		}
		dims = len(d.Embedding)
		v := make([]float32, dims)
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	return out, nil
}
