package main

import (
	"context"
	"flag"
	"os"
	"testing"
)

// TestEmbeddingSettings: --embedding-model and --embedding-base-url (and
// their variables) make the embedding client, on the model endpoint by
// default; without a model there is none.
func TestEmbeddingSettings(t *testing.T) {
	url, _ := startMockLLM(t)
	parse := func(args ...string) *settings {
		t.Helper()
		var s settings
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		if err := s.register(fs, appSettings); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	for _, name := range []string{"EMBEDDING_MODEL", "EMBEDDING_BASE_URL"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	if c, err := parse("--llm-base-url", url).embedder(); c != nil || err != nil {
		t.Fatalf("embedder without a model = %v, %v", c, err)
	}
	// The model endpoint by default.
	c, err := parse("--llm-base-url", url, "--embedding-model", "embed-x").embedder()
	if err != nil || c == nil {
		t.Fatalf("embedder = %v, %v", c, err)
	}
	vecs, err := c.Embed(context.Background(), "", []string{"install the daemon", "billing"})
	if err != nil || len(vecs) != 2 || len(vecs[0]) == 0 {
		t.Fatalf("Embed = %d vectors, %v", len(vecs), err)
	}
	// Its own endpoint: the model endpoint is unreachable, the embeddings'
	// is not; and from the environment.
	t.Setenv("EMBEDDING_MODEL", "embed-y")
	t.Setenv("EMBEDDING_BASE_URL", url)
	s := parse("--llm-base-url", "http://127.0.0.1:1/v1", "--llm-retries", "0")
	if s.embeddingModel != "embed-y" {
		t.Errorf("model from the environment = %q", s.embeddingModel)
	}
	if c, err = s.embedder(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(context.Background(), "", []string{"x"}); err != nil {
		t.Errorf("Embed on --embedding-base-url: %v", err)
	}
	s = parse("--llm-base-url", url, "--embedding-base-url", "http://127.0.0.1:1/v1", "--embedding-model", "m", "--llm-retries", "0")
	if c, err = s.embedder(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(context.Background(), "", []string{"x"}); err == nil {
		t.Error("Embed reached the model endpoint instead of --embedding-base-url")
	}
}
