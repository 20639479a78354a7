package llmtest

import (
	"slices"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// kbExcerpts is a system message as an agent writes it when its
// knowledge base is larger than its budget: the prompt, then the chunks
// retrieval ranked best, each under a header naming its file.
const kbExcerpts = `You are the support agent of Kestrel.

Knowledge base excerpts (the parts most relevant to the user's message):

### billing.docx (part 2)

Refunds

Refund requests are accepted within 30 days of purchase. After that, the
plan runs to the end of its period.

- Annual plans are refunded pro rata.
- Monthly plans are not refunded after the first week.

Plan | Price | Storage
Team | $12 per user per month | 1 TB

### guide.pdf (part 1)

How do I install Kestrel on Linux?

Installing on Linux takes the snap package: run snap install kestrel. It needs 2 GB of memory!`

func TestSentences(t *testing.T) {
	text, ok := KnowledgeText([]harness.Message{{Role: harness.RoleSystem, Content: kbExcerpts}})
	if !ok {
		t.Fatal("no knowledge text found")
	}
	got := sentences(text)
	want := []string{
		"Refund requests are accepted within 30 days of purchase.",
		"After that, the plan runs to the end of its period.",
		"- Annual plans are refunded pro rata.",
		"- Monthly plans are not refunded after the first week.",
		"Plan | Price | Storage",
		"Team | $12 per user per month | 1 TB",
		"Installing on Linux takes the snap package: run snap install kestrel.",
		"It needs 2 GB of memory!",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sentences:\n%q\nwant\n%q", got, want)
	}
}

func TestKnowledgeText(t *testing.T) {
	sys := func(s string) harness.Message { return harness.Message{Role: harness.RoleSystem, Content: s} }
	cases := []struct {
		name string
		msgs []harness.Message
		want string
		ok   bool
	}{
		{"whole base", []harness.Message{sys("Be brief.\n\nKnowledge base:\n\n### a.md\n\nFact one.")}, "\n### a.md\n\nFact one.", true},
		{"excerpts", []harness.Message{sys("Knowledge base excerpts (best first):\nFact.")}, "Fact.", true},
		{"last marker wins", []harness.Message{sys("Knowledge base:\nold\nKnowledge base:\nnew")}, "new", true},
		{"mid-line mention is no marker", []harness.Message{sys("Use the Knowledge base: it helps.")}, "", false},
		{"a line that does not end with a colon", []harness.Message{sys("Knowledge base of Kestrel\nFact.")}, "", false},
		{"only system messages", []harness.Message{{Role: harness.RoleUser, Content: "Knowledge base:\nFact."}}, "", false},
		{"none", nil, "", false},
	}
	for _, c := range cases {
		got, ok := KnowledgeText(c.msgs)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestBestSentence(t *testing.T) {
	text, _ := KnowledgeText([]harness.Message{{Role: harness.RoleSystem, Content: kbExcerpts}})
	cases := []struct {
		question, want string
	}{
		{"Within how many days of purchase are refund requests accepted?", "Refund requests are accepted within 30 days of purchase."},
		// Inflected words meet their stems, as in the fake embeddings.
		{"Are annual subscriptions refunded?", "- Annual plans are refunded pro rata."},
		{"What does the Team plan cost per user?", "Team | $12 per user per month | 1 TB"},
		// The heading "How do I install Kestrel on Linux?" shares more
		// words, but headings are never the answer.
		{"How do I install Kestrel on Linux?", "Installing on Linux takes the snap package: run snap install kestrel."},
		{"How much memory is needed?", "It needs 2 GB of memory!"},
	}
	for _, c := range cases {
		got, ok := BestSentence(text, c.question)
		if !ok || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.question, got, ok, c.want)
		}
	}
	for _, q := range []string{"What is the weather in Paris?", "How is it?", ""} {
		if got, ok := BestSentence(text, q); ok {
			t.Errorf("%q shares no word, yet got %q", q, got)
		}
	}
	// Of sentences sharing as many words, the first wins: retrieval's
	// order decides.
	if got, _ := BestSentence("A plan costs $5.\n\nA plan costs $9.", "plan cost"); got != "A plan costs $5." {
		t.Errorf("tie: got %q", got)
	}
	if got, _ := BestSentence("A plan costs $9.\n\nA plan costs $5.", "plan cost"); got != "A plan costs $9." {
		t.Errorf("tie: got %q", got)
	}
}

// TestKnowledgeRule checks the rule through the wire and its place among
// the others.
func TestKnowledgeRule(t *testing.T) {
	srv := NewServer(Options{Answers: map[string]string{"password": "Use the reset link."}})
	defer srv.Close()
	system := map[string]any{"role": "system", "content": kbExcerpts}
	askKB := func(prompt string, tools ...map[string]any) map[string]any {
		body := map[string]any{"model": "m", "messages": []any{system, user(prompt)}}
		if len(tools) > 0 {
			body["tools"] = tools
		}
		return body
	}
	cases := []struct {
		name string
		body map[string]any
		want string
	}{
		{"answered from the knowledge base", askKB("How many days after purchase can I ask for a refund?"),
			"Refund requests are accepted within 30 days of purchase."},
		{"Options.Answers first", askKB("I forgot my password, what about a refund?"), "Use the reset link."},
		{"arithmetic first", askKB("What is 30 + 12?"), "The answer is 42."},
		{"no shared word: echoed", askKB("Bonjour?"), "Bonjour?"},
		{"no knowledge base: echoed", ask("How many days after purchase can I ask for a refund?"),
			"How many days after purchase can I ask for a refund?"},
	}
	for _, c := range cases {
		if got := text(t, post(t, srv.URL, c.body)); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	// A tool the question names is called rather than answered from the
	// knowledge base.
	tool := map[string]any{"type": "function", "function": map[string]any{
		"name": "open_refund", "description": "Open a refund request",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{}},
	}}
	r := post(t, srv.URL, askKB("Please open a refund for me.", tool))
	if r.finish != "tool_calls" || len(r.calls) != 1 || r.calls[0].Function.Name != "open_refund" {
		t.Fatalf("tool call: finish %q, calls %+v", r.finish, r.calls)
	}
}
