package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

func TestEmbed(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{EmbeddingDims: 64})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{Model: "embed-small"})
	ctx := context.Background()
	texts := []string{"How do I install Gauntlet on Linux?", "Installing Gauntlet on a Linux machine", "Refund policy for annual plans", ""}
	vecs, err := c.Embed(ctx, "", texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != 64 {
			t.Fatalf("vector %d has %d dimensions, want 64", i, len(v))
		}
		want := llmtest.Embedding("embed-small", texts[i], 64)
		for j := range v {
			if v[j] != want[j] {
				t.Fatalf("vector %d differs from llmtest.Embedding at %d", i, j)
			}
		}
	}
	if near, far := cosine(vecs[0], vecs[1]), cosine(vecs[0], vecs[2]); near <= far || near < 0.3 {
		t.Errorf("cosine(install, installing) = %.3f, cosine(install, refund) = %.3f: related texts should be nearer", near, far)
	}
	if cosine(vecs[3], vecs[0]) != 0 {
		t.Error("an empty text should give the zero vector")
	}
	other, err := c.Embed(ctx, "embed-large", texts[:1])
	if err != nil {
		t.Fatal(err)
	}
	if cosine(other[0], vecs[0]) > 0.5 {
		t.Error("another model should give an unrelated vector")
	}
	if got := srv.Stats().EmbeddedTexts; got != 5 {
		t.Errorf("EmbeddedTexts = %d, want 5", got)
	}
	if v, err := c.Embed(ctx, "", nil); err != nil || v != nil {
		t.Errorf("no text: %v, %v; want no vector and no error", v, err)
	}
}

func TestEmbedDown(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	// A 502: retried as many times as the client retries, then given up.
	c := newClient(t, srv.URL, Options{MaxRetries: 1})
	srv.SetEmbeddingsDown(true)
	_, err := c.Embed(context.Background(), "m", []string{"x"})
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusBadGateway || e.Attempts != 2 || !strings.Contains(err.Error(), "down") {
		t.Fatalf("err = %v; want a 502 *Error after 2 attempts", err)
	}
	srv.SetEmbeddingsDown(false)
	if _, err := c.Embed(context.Background(), "m", []string{"x"}); err != nil {
		t.Fatalf("back up: %v", err)
	}
	srv.Close()
	_, err = c.Embed(context.Background(), "m", []string{"x"})
	if !errors.Is(err, harness.ErrUnreachable) {
		t.Errorf("closed endpoint: %v; want harness.ErrUnreachable", err)
	}
}

func TestEmbedMalformed(t *testing.T) {
	for name, body := range map[string]string{
		"too few":   `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[1,0]}],"usage":{}}`,
		"ragged":    `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[1,0]},{"object":"embedding","index":1,"embedding":[1]}],"usage":{}}`,
		"repeated":  `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[1,0]},{"object":"embedding","index":0,"embedding":[0,1]}],"usage":{}}`,
		"not JSON":  `{"object":`,
		"empty vec": `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[]},{"object":"embedding","index":1,"embedding":[]}],"usage":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(body))
			}))
			defer ts.Close()
			c := newClient(t, ts.URL, Options{MaxRetries: -1})
			_, err := c.Embed(context.Background(), "m", []string{"a", "b"})
			if !errors.Is(err, ErrMalformedResponse) {
				t.Fatalf("err = %v; want ErrMalformedResponse", err)
			}
		})
	}
}

func TestEmbedOrder(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","model":"m","data":[{"object":"embedding","index":1,"embedding":[0,1]},{"object":"embedding","index":0,"embedding":[1,0]}],"usage":{}}`))
	}))
	defer ts.Close()
	c := newClient(t, ts.URL, Options{})
	v, err := c.Embed(context.Background(), "m", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if v[0][0] != 1 || v[1][1] != 1 {
		t.Errorf("vectors not in input order: %v", v)
	}
}

// TestEmbedEncodings: vectors are asked for in base64; an endpoint that
// answers numbers anyway is read, and one that refuses base64 is asked
// again for numbers, then only for numbers.
func TestEmbedEncodings(t *testing.T) {
	t.Run("base64 asked, and read", func(t *testing.T) {
		var formats []string
		h := llmtest.NewHandler(llmtest.Options{EmbeddingDims: 8})
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				EncodingFormat string `json:"encoding_format"`
			}
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &body)
			formats = append(formats, body.EncodingFormat)
			r.Body = io.NopCloser(bytes.NewReader(b))
			h.ServeHTTP(w, r)
		}))
		defer ts.Close()
		c := newClient(t, ts.URL+"/v1", Options{})
		v, err := c.Embed(context.Background(), "m", []string{"hello world"})
		if err != nil {
			t.Fatal(err)
		}
		want := llmtest.Embedding("m", "hello world", 8)
		if fmt.Sprint(v[0]) != fmt.Sprint(want) || fmt.Sprint(formats) != "[base64]" {
			t.Errorf("vector %v (want %v), formats asked %v", v[0], want, formats)
		}
	})
	t.Run("numbers answered to base64", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25]}],"usage":{}}`))
		}))
		defer ts.Close()
		c := newClient(t, ts.URL, Options{})
		v, err := c.Embed(context.Background(), "m", []string{"a"})
		if err != nil || fmt.Sprint(v) != "[[0.5 -0.25]]" {
			t.Errorf("got %v, %v", v, err)
		}
	})
	t.Run("base64 refused", func(t *testing.T) {
		var formats []string
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				EncodingFormat string `json:"encoding_format"`
			}
			json.NewDecoder(r.Body).Decode(&body)
			formats = append(formats, body.EncodingFormat)
			w.Header().Set("Content-Type", "application/json")
			if body.EncodingFormat == "base64" {
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"error":{"message":"unsupported encoding_format","type":"invalid_request_error"}}`))
				return
			}
			w.Write([]byte(`{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[1,0]}],"usage":{}}`))
		}))
		defer ts.Close()
		c := newClient(t, ts.URL, Options{})
		for range 2 {
			if v, err := c.Embed(context.Background(), "m", []string{"a"}); err != nil || fmt.Sprint(v) != "[[1 0]]" {
				t.Fatalf("got %v, %v", v, err)
			}
		}
		if fmt.Sprint(formats) != "[base64 float float]" {
			t.Errorf("formats asked %v; want base64 once, then float", formats)
		}
	})
	t.Run("bad base64", func(t *testing.T) {
		for name, vec := range map[string]string{"not base64": `"%%%"`, "not float32s": `"AAA="`} {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":` + vec + `}],"usage":{}}`))
			}))
			c := newClient(t, ts.URL, Options{MaxRetries: -1})
			if _, err := c.Embed(context.Background(), "m", []string{"a"}); !errors.Is(err, ErrMalformedResponse) {
				t.Errorf("%s: err = %v; want ErrMalformedResponse", name, err)
			}
			ts.Close()
		}
	})
}
