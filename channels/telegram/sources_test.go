package telegram_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram"
	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

func TestSourcesLine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources []harness.Source
		want    string
	}{
		{"none", nil, ""},
		{"only chunks given because the base fits", []harness.Source{{File: "a.md", Chunk: 0}, {File: "b.md", Chunk: 1}}, ""},
		{"one", []harness.Source{{File: "faq.md", Chunk: 1, Score: 2.5}}, "Sources: faq.md (part 2)"},
		{"files in order, parts together", []harness.Source{
			{File: "faq.md", Chunk: 1, Score: 3}, {File: "guide.pdf", Chunk: 4, Score: 2}, {File: "faq.md", Chunk: 6, Score: 1},
		}, "Sources: faq.md (parts 2 and 7), guide.pdf (part 5)"},
		{"at most three, each once, unmatched skipped", []harness.Source{
			{File: "a.md", Chunk: 0, Score: 5}, {File: "a.md", Chunk: 0, Score: 5}, {File: "z.md", Chunk: 3},
			{File: "a.md", Chunk: 2, Score: 4}, {File: "b.md", Chunk: 0, Score: 3}, {File: "c.md", Chunk: 0, Score: 2},
		}, "Sources: a.md (parts 1 and 3), b.md (part 1)"},
		{"three parts of a file", []harness.Source{
			{File: "a.md", Chunk: 0, Score: 5}, {File: "a.md", Chunk: 4, Score: 4}, {File: "a.md", Chunk: 9, Score: 3},
		}, "Sources: a.md (parts 1, 5 and 10)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := telegram.SourcesLine(tc.sources); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestShowSources checks that config.show_sources ends each reply with
// its sources, and that without it the reply is sent as it is.
func TestShowSources(t *testing.T) {
	sources := []harness.Source{{File: "faq.md", Chunk: 1, Score: 2}, {File: "guide.pdf", Chunk: 4, Score: 1}, {File: "other.md", Chunk: 0}}
	host := &fakeHost{reply: func(_ context.Context, m *harness.InboundMessage) (*harness.Reply, error) {
		if m.Text == "no sources" {
			return &harness.Reply{Text: "I know nothing about that.", Sources: []harness.Source{}}, nil
		}
		return &harness.Reply{Text: "We open at nine.", Sources: sources}, nil
	}}
	for _, tc := range []struct {
		name   string
		show   any // the config's show_sources; nil: absent
		chat   int64
		want   string
		noneOK string
	}{
		{"on", true, 7, "We open at nine.\n\nSources: faq.md (part 2), guide.pdf (part 5)", "I know nothing about that."},
		{"off", false, 8, "We open at nine.", "I know nothing about that."},
		{"absent", nil, 9, "We open at nine.", "I know nothing about that."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := telegramtest.NewServer(testToken)
			defer srv.Close()
			cfg := map[string]any{"bot_token": testToken, "api_url": srv.URL}
			if tc.show != nil {
				cfg["show_sources"] = tc.show
			}
			startWith(t, cfg, host, telegram.Options{})
			srv.SendUserMessage(tc.chat, tc.chat, "When do you open?")
			srv.SendUserMessage(tc.chat, tc.chat, "no sources")
			sent, err := srv.WaitSent(ctxTimeout(t, 5*time.Second), 2)
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, m := range sent {
				texts = append(texts, m.Text)
			}
			if want := []string{tc.want, tc.noneOK}; !slices.Equal(texts, want) {
				t.Errorf("sent %q, want %q", texts, want)
			}
		})
	}

	t.Run("a long reply keeps its sources at the end", func(t *testing.T) {
		srv := telegramtest.NewServer(testToken)
		defer srv.Close()
		long := strings.Repeat("word ", 1000) // 5,000 characters: two parts
		host := &fakeHost{reply: func(context.Context, *harness.InboundMessage) (*harness.Reply, error) {
			return &harness.Reply{Text: long, Sources: sources}, nil
		}}
		startWith(t, map[string]any{"bot_token": testToken, "api_url": srv.URL, "show_sources": true}, host, telegram.Options{})
		srv.SendUserMessage(3, 3, "tell me")
		harnesstest.Eventually(t, 0, "two parts", func() bool { return len(srv.Sent()) >= 2 })
		sent := srv.Sent()
		if len(sent) != 2 || !strings.HasSuffix(sent[1].Text, "\n\nSources: faq.md (part 2), guide.pdf (part 5)") {
			t.Errorf("sent %d parts, the last ending %q", len(sent), sent[len(sent)-1].Text[max(0, len(sent[len(sent)-1].Text)-60):])
		}
	})
}
