package llm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

func TestParseProvider(t *testing.T) {
	for _, c := range []struct {
		spec string
		want Provider
	}{
		{"local=openai,base_url=http://127.0.0.1:8000/v1", Provider{Name: "local", Kind: KindOpenAI, BaseURL: "http://127.0.0.1:8000/v1"}},
		{"claude=anthropic", Provider{Name: "claude", Kind: KindAnthropic, BaseURL: "https://api.anthropic.com", APIKeyEnv: "ANTHROPIC_API_KEY"}},
		{" g = gemini , api_key_env=MY_KEY , rpm=60, tpm=100000", Provider{Name: "g", Kind: KindGemini, BaseURL: "https://generativelanguage.googleapis.com", APIKeyEnv: "MY_KEY", RPM: 60, TPM: 100000}},
	} {
		got, err := ParseProvider(c.spec)
		if err != nil || got != c.want {
			t.Errorf("ParseProvider(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
	}
	for spec, want := range map[string]string{
		"openai":                                 "expected NAME=KIND",
		"x=bedrock":                              `unknown kind "bedrock" (known: openai, anthropic, gemini)`,
		"x=openai":                               "kind openai needs base_url",
		"x=anthropic,baseurl=http://h":           `unknown setting "baseurl"`,
		"x=anthropic,base_url=ftp://h":           "base_url must be an http or https URL",
		"x=anthropic,rpm=0":                      "rpm must be a whole number above 0",
		"x=anthropic,tpm=many":                   "tpm must be a whole number above 0",
		"x=anthropic,rpm=1,rpm=2":                "rpm is given twice",
		"x=anthropic,api_key_env=1BAD":           "api_key_env must name an environment variable",
		"a/b=anthropic":                          "may hold only letters",
		"=anthropic":                             "the name is empty",
		"x=anthropic,base_url":                   "is not key=value",
		"x=anthropic,base_url=http://u:SECRET@h": "",
	} {
		_, err := ParseProvider(spec)
		if want == "" {
			if err != nil {
				t.Errorf("ParseProvider(%q): %v", spec, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseProvider(%q) = %v; want an error saying %q", spec, err, want)
		}
	}
	p, _ := ParseProvider("x=anthropic,base_url=http://u:SECRET@h")
	if strings.Contains(p.String(), "SECRET") {
		t.Errorf("String() shows the credentials: %s", p)
	}
}

func TestParseProviders(t *testing.T) {
	ps, err := ParseProviders([]string{"anthropic=anthropic,base_url=http://127.0.0.1:1", "", "local=openai,base_url=http://h/v1"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"anthropic", "local", "gemini"}) || ps[0].BaseURL != "http://127.0.0.1:1" || ps[0].builtIn {
		t.Fatalf("providers %+v", ps)
	}
	if _, err := ParseProviders([]string{"a=gemini", "a=anthropic"}); err == nil || !strings.Contains(err.Error(), "provider a is given twice") {
		t.Fatalf("a name twice: %v", err)
	}
}

func TestRouter(t *testing.T) {
	var defRec, provRec recorder
	def := llmtest.NewServer(llmtest.Options{Respond: defRec.respond})
	defer def.Close()
	prov := llmtest.NewServer(llmtest.Options{Respond: provRec.respond, APIKey: secretKey})
	defer prov.Close()
	env := map[string]string{"LOCAL_KEY": secretKey}
	ps, err := ParseProviders([]string{"local=openai,base_url=" + prov.URL + ",api_key_env=LOCAL_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(RouterOptions{Default: newClient(t, def.URL, Options{Model: "llama3.2"}), Providers: ps,
		Client: Options{MaxRetries: -1}, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		ref  string
		rec  *recorder
		sent string
	}{
		{"local/qwen3:8b", &provRec, "qwen3:8b"},
		{"meta-llama/Llama-3-8B", &defRec, "meta-llama/Llama-3-8B"},
		{"llama3.2", &defRec, "llama3.2"},
		{"local/", &defRec, "local/"},
	} {
		req := ask("What is 2 + 2?")
		req.Model = c.ref
		if _, err := r.Chat(ctx, req); err != nil {
			t.Fatalf("%s: %v", c.ref, err)
		}
		if got := c.rec.last(t).Model; got != c.sent {
			t.Errorf("%s: sent model %q to the %s endpoint, want %q", c.ref, got, map[*recorder]string{&defRec: "default", &provRec: "provider"}[c.rec], c.sent)
		}
		if req.Model != c.ref {
			t.Errorf("the caller's request was changed: %q", req.Model)
		}
	}
	if name, kind, base := r.Endpoint("local/x"); name != "local" || kind != KindOpenAI || base != prov.URL {
		t.Errorf("Endpoint = %s %s %s", name, kind, base)
	}
	if name, _, base := r.Endpoint("x"); name != "" || base != def.URL {
		t.Errorf("Endpoint of a plain reference = %s %s", name, base)
	}

	// A built-in provider without its key: kept, and it says which
	// variable to set when used.
	if err := r.Check("anthropic/claude"); !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("Check = %v", err)
	}
	req := ask("hi")
	req.Model = "gemini/gemini-2.5-flash"
	if _, err := r.Chat(ctx, req); !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "GEMINI_API_KEY") {
		t.Fatalf("Chat without the key = %v", err)
	}

	models, err := r.Models(ctx)
	if err != nil || !slices.Contains(models, llmtest.DefaultModel) || !slices.Contains(models, "local/"+llmtest.DefaultModel) {
		t.Fatalf("Models = %v, %v", models, err)
	}
	var _ harness.ChatModel = r
}

// TestRouterKeyVariableUnset: a provider whose key variable is given and
// not set stops the program at start, naming the variable, never a key.
func TestRouterKeyVariableUnset(t *testing.T) {
	def := newClient(t, "http://127.0.0.1:1/v1", Options{})
	ps, err := ParseProviders([]string{"claude=anthropic,api_key_env=TEAM_CLAUDE_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewRouter(RouterOptions{Default: def, Providers: ps, Getenv: func(string) string { return "" }})
	if !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "TEAM_CLAUDE_KEY") || !strings.Contains(err.Error(), "claude") {
		t.Fatalf("NewRouter = %v; want an error naming provider claude and TEAM_CLAUDE_KEY", err)
	}
	// Without api_key_env, the kind's usual variable is the one.
	ps, _ = ParseProviders([]string{"g=gemini"})
	_, err = NewRouter(RouterOptions{Default: def, Providers: ps, Getenv: func(string) string { return "" }})
	if !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "GEMINI_API_KEY") {
		t.Fatalf("NewRouter = %v; want an error naming GEMINI_API_KEY", err)
	}

}
