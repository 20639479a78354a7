package agent

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestChunkSpans(t *testing.T) {
	long := strings.Repeat("word ", 400)             // one line of 2,000 bytes
	noSpace := strings.Repeat("é", 1000)             // 2,000 bytes, no space
	lines := strings.Repeat("a line of text\n", 120) // one paragraph of many lines
	var paras []string
	for i := range 40 {
		paras = append(paras, fmt.Sprintf("Paragraph %d. %s", i, strings.Repeat("filler ", 10+i%30)))
	}
	for name, text := range map[string]string{
		"paragraphs": strings.Join(paras, "\n\n"), "long line": long, "no space": noSpace, "lines": lines,
		"mixed": "intro\n\n" + long + "\n\n" + lines + "\n\n" + noSpace + "\n\n\n\n  \n\nend",
		"short": "just this", "blank": " \n\n \n",
	} {
		t.Run(name, func(t *testing.T) {
			spans := chunkSpans(text, chunkSize, chunkOverlap)
			covered := make([]bool, len(text))
			prev := span{-1, -1}
			overlaps := 0
			for _, sp := range spans {
				if sp.end-sp.start > chunkSize || sp.end <= sp.start {
					t.Fatalf("chunk [%d,%d) of %d bytes", sp.start, sp.end, sp.end-sp.start)
				}
				if !utf8.ValidString(text[sp.start:sp.end]) {
					t.Fatalf("chunk [%d,%d) cuts a rune", sp.start, sp.end)
				}
				if sp.start <= prev.start || sp.end <= prev.end {
					t.Fatalf("chunk [%d,%d) does not move on from [%d,%d)", sp.start, sp.end, prev.start, prev.end)
				}
				if sp.start < prev.end {
					overlaps++
				}
				for i := sp.start; i < sp.end; i++ {
					covered[i] = true
				}
				prev = sp
			}
			for i, c := range covered {
				if !c && !isSpace(text[i]) {
					t.Fatalf("byte %d (%q) is in no chunk", i, text[i])
				}
			}
			if name == "paragraphs" || name == "lines" {
				if overlaps == 0 {
					t.Error("no chunk overlaps the previous one")
				}
				for _, sp := range spans {
					if sp.end-sp.start < chunkSize/3 && sp.end != len(strings.TrimRight(text, " \n")) {
						t.Errorf("chunk of only %d bytes", sp.end-sp.start)
					}
				}
			}
		})
	}
}

func TestBM25Ranks(t *testing.T) {
	b := newIndexBuilder()
	b.add("a.md", "The cat sat on the mat.\n\nDogs bark at night.\n\n"+strings.Repeat("Nothing to see here. ", 60))
	b.add("b.md", "Quantum chromodynamics describes the strong interaction.\n\nThe cat and the CAT and the Cat.")
	ix := b.finish()
	hits := ix.search("cat", 10)
	if len(hits) != 2 {
		t.Fatalf("hits = %v", hits)
	}
	if c := ix.chunks[hits[0].doc]; c.file != "b.md" {
		t.Errorf("best chunk for cat = %s %q", c.file, c.text)
	}
	if hits := ix.search("chromodynamics!", 10); len(hits) != 1 || ix.chunks[hits[0].doc].file != "b.md" {
		t.Errorf("hits for a rare word = %v", hits)
	}
	if hits := ix.search("", 10); len(hits) != 0 {
		t.Errorf("hits for nothing = %v", hits)
	}
}

func TestEachTerm(t *testing.T) {
	var got []string
	eachTerm("Hello, WORLD! Ünïcode 42x — naïve_café", nil, func(b []byte) { got = append(got, string(b)) })
	if want := "hello world ünïcode 42x naïve café"; strings.Join(got, " ") != want {
		t.Errorf("terms = %q, want %q", got, want)
	}
}

func TestCompleteRunes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"abc", 3}, {"ab\xe2\x9c", 2}, {"ab\xe2\x9c\x93", 5}, {"\xf0\x9f\x8e", 0}, {"a\xf0", 1}, {"", 0},
	} {
		if got := completeRunes([]byte(tc.in)); got != tc.want {
			t.Errorf("completeRunes(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestKeyedMutex(t *testing.T) {
	var k keyedMutex
	var wg sync.WaitGroup
	inside := map[string]int{}
	var mu sync.Mutex
	for i := range 200 {
		wg.Go(func() {
			key := fmt.Sprint(i % 7)
			unlock := k.lock(key)
			mu.Lock()
			inside[key]++
			if inside[key] > 1 {
				t.Errorf("two holders of %s", key)
			}
			mu.Unlock()
			mu.Lock()
			inside[key]--
			mu.Unlock()
			unlock()
		})
	}
	wg.Wait()
	if n := k.size(); n != 0 {
		t.Errorf("%d keys left after every unlock", n)
	}
}

func TestRedact(t *testing.T) {
	secrets := secretValues(map[string]any{"bot_token": "12:ab/c d", "name": "visible", "n": map[string]any{"password": "pw"}}, secretRule{})
	got := redact("GET /bot12:ab/c d/x?t=12%3Aab%2Fc+d and 12:ab%2Fc%20d, pw, visible", secrets)
	if strings.Contains(got, "12:ab") || strings.Contains(got, "pw") || !strings.Contains(got, "visible") {
		t.Errorf("redact = %q", got)
	}
}

func TestTopK(t *testing.T) {
	scores := []float64{0, 3, 1, 3, 0, 5, 2, 0.5, 4}
	for k, want := range map[int]string{0: "", 1: "5", 3: "5 8 1", 20: "5 8 1 3 6 2 7"} {
		var got []string
		for _, h := range topK(scores, k) {
			got = append(got, fmt.Sprint(h.doc))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("topK(k=%d) = %v, want %s", k, got, want)
		}
	}
}

func TestKBCacheBounded(t *testing.T) {
	dir := t.TempDir()
	s := &Service{opts: Options{DataDir: dir, KBBudgetTokens: 10}, indexes: map[string]*kbEntry{}}
	s.log = slogDiscard()
	for i := range maxCachedKB + 5 {
		id := fmt.Sprint("a", i)
		root, err := s.kbRoot(id, true)
		if err != nil {
			t.Fatal(err)
		}
		root.WriteFile("x.md", []byte(strings.Repeat("word ", 100)), 0o644)
		root.Close()
		if _, err := s.snapshot(id); err != nil {
			t.Fatal(err)
		}
		if i == 0 || i%3 == 0 {
			s.snapshot("a0") // kept in use: never the least recent
		}
	}
	if n := len(s.indexes); n != maxCachedKB {
		t.Errorf("%d knowledge bases cached, want %d", n, maxCachedKB)
	}
	if s.indexes["a0"] == nil {
		t.Error("the most used knowledge base was dropped")
	}
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }
