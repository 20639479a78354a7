package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/dataset"
)

// askModel posts one question to a model of the mock and returns the
// answer's text.
func askModel(t *testing.T, url, model, prompt string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "messages": []any{map[string]string{"role": "user", "content": prompt}}})
	res, err := http.Post(url+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 || len(out.Choices) != 1 {
		t.Fatalf("status %d, err %v", res.StatusCode, err)
	}
	return out.Choices[0].Message.Content
}

// sampleQuestions reads the prompts and answers of a sample dataset the
// way gauntlet import-tests does.
func sampleQuestions(t *testing.T, file, format, preset string) (prompts, answers []string) {
	t.Helper()
	f, err := os.Open(filepath.Join("../../examples/datasets", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := dataset.Parse(f, dataset.Options{Format: format, Preset: preset, DomainID: "d"})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("%v %v", err, res.Errors)
	}
	for _, row := range res.Rows {
		prompts = append(prompts, row.Test.Prompt)
		answers = append(answers, row.Test.Expected.Answer)
	}
	return prompts, answers
}

func TestMockLLMSkill(t *testing.T) {
	gsm := filepath.Join("../../examples/datasets", "gsm8k-sample.jsonl")
	url, _ := startMockLLM(t, "--answers", gsm, "--answers-preset", "gsm8k", "--skill", "strong=1", "--skill", "weak=0")
	prompts, answers := sampleQuestions(t, "gsm8k-sample.jsonl", dataset.JSONL, dataset.GSM8K)
	for i, p := range prompts {
		if got, want := askModel(t, url, "strong", p), "The answer is "+answers[i]+"."; got != want {
			t.Errorf("strong: %q, want %q", got, want)
		}
		if got := askModel(t, url, "other", p); got != "The answer is "+answers[i]+"." {
			t.Errorf("a model without --skill is always right: %q", got)
		}
		if got := askModel(t, url, "weak", p); got == "The answer is "+answers[i]+"." || !strings.HasPrefix(got, "The answer is ") {
			t.Errorf("weak: %q for answer %s", got, answers[i])
		}
	}
	// The built-in arithmetic follows the skill of a model named by --skill.
	if got := askModel(t, url, "weak", "What is 40 + 2?"); got != "The answer is 43." {
		t.Errorf("weak arithmetic: %q", got)
	}
	if got := askModel(t, url, "other", "What is 40 + 2?"); got != "The answer is 42." {
		t.Errorf("arithmetic of a model without --skill: %q", got)
	}
	// Anything else is left to the mock's rules: echoed.
	if got := askModel(t, url, "weak", "hello there"); got != "hello there" {
		t.Errorf("unknown prompt: %q", got)
	}

	t.Run("mmlu letters", func(t *testing.T) {
		mmlu := filepath.Join("../../examples/datasets", "mmlu-sample.csv")
		url, _ := startMockLLM(t, "--answers", mmlu, "--answers-preset", "mmlu", "--skill", "weak=0")
		prompts, answers := sampleQuestions(t, "mmlu-sample.csv", dataset.CSV, dataset.MMLU)
		for i, p := range prompts {
			got := askModel(t, url, "weak", p)
			if len(got) != len("The answer is A.") || got == "The answer is "+answers[i]+"." {
				t.Errorf("weak: %q for answer %s", got, answers[i])
			}
		}
	})

	t.Run("a fraction, the same every time", func(t *testing.T) {
		draws := func() []string {
			url, _ := startMockLLM(t, "--answers", gsm, "--answers-preset", "gsm8k", "--skill", "half=0.5", "--seed", "3")
			var out []string
			for range 20 {
				for _, p := range prompts {
					out = append(out, askModel(t, url, "half", p))
				}
			}
			return out
		}
		a, b := draws(), draws()
		right := 0
		for i, got := range a {
			if got != b[i] {
				t.Fatalf("asking %d: %q then %q: the same seed must give the same answers", i, got, b[i])
			}
			if got == "The answer is "+answers[i%len(answers)]+"." {
				right++
			}
		}
		if right < 70 || right > 130 {
			t.Fatalf("%d of %d right with skill 0.5", right, len(a))
		}
	})
}

func TestMockLLMSkillFlags(t *testing.T) {
	gsm := filepath.Join("../../examples/datasets", "gsm8k-sample.jsonl")
	txt := filepath.Join(t.TempDir(), "answers.txt")
	os.WriteFile(txt, []byte("x"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--skill", "weak"}, "want MODEL=P"},
		{[]string{"--skill", "weak=2"}, "between 0 and 1"},
		{[]string{"--skill", "weak=NaN"}, "between 0 and 1"},
		{[]string{"--skill", "w=0.1", "--skill", "w=0.2"}, "given twice"},
		{[]string{"--answers-preset", "gsm8k"}, "needs --answers"},
		{[]string{"--answers", txt}, ".jsonl or .csv"},
		{[]string{"--answers", filepath.Join(t.TempDir(), "none.jsonl")}, "no such file"},
		{[]string{"--answers", gsm, "--answers-preset", "nope"}, "preset"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"mockllm", "--addr", "127.0.0.1:0"}, tc.args...), io.Discard, &stderr)
		if err == nil || !strings.Contains(err.Error()+stderr.String(), tc.want) {
			t.Errorf("%v: err %v, stderr %s; want %q", tc.args, err, stderr.String(), tc.want)
		}
	}
}
