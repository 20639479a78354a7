package llm_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// A router sends "claude/…" references to an Anthropic provider and the
// rest to the default OpenAI-compatible endpoint. Here both are the fake
// endpoint, which speaks every kind's wire format.
func ExampleNewRouter() {
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()

	local, err := llm.New(llm.Options{BaseURL: srv.URL, Model: "llama3.2"})
	if err != nil {
		log.Fatal(err)
	}
	providers, err := llm.ParseProviders([]string{
		"claude=anthropic,base_url=" + strings.TrimSuffix(srv.URL, "/v1") + ",api_key_env=CLAUDE_KEY",
	})
	if err != nil {
		log.Fatal(err)
	}
	router, err := llm.NewRouter(llm.RouterOptions{Default: local, Providers: providers,
		Getenv: func(name string) string { return "key-of-" + name }})
	if err != nil {
		log.Fatal(err)
	}
	for _, ref := range []string{"llama3.2", "claude/claude-sonnet-4-5"} {
		resp, err := router.Chat(context.Background(), &harness.ChatRequest{Model: ref,
			Messages: []harness.Message{{Role: harness.RoleUser, Content: "What is 19 + 23?"}}})
		if err != nil {
			log.Fatal(err)
		}
		provider, kind, _ := router.Endpoint(ref)
		fmt.Printf("%s → provider %q (%s): %s\n", ref, provider, kind, resp.Message.Content)
	}
	// Output:
	// llama3.2 → provider "" (openai): The answer is 42.
	// claude/claude-sonnet-4-5 → provider "claude" (anthropic): The answer is 42.
}
