package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/dataset"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// skillFlag collects --skill MODEL=P: the chance that MODEL answers a
// question the mock knows correctly.
type skillFlag map[string]float64

func (s skillFlag) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatFloat(s[k], 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

func (s skillFlag) Set(v string) error {
	model, p, ok := strings.Cut(v, "=")
	model = strings.TrimSpace(model)
	if !ok || model == "" {
		return fmt.Errorf("want MODEL=P, e.g. strong-model=0.9, not %q", v)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return fmt.Errorf("the skill of %s must be a number between 0 and 1, not %q", model, p)
	}
	if _, dup := s[model]; dup {
		return fmt.Errorf("model %s is given twice", model)
	}
	s[model] = f
	return nil
}

// skilled answers the questions the mock knows (the rows of an answers
// file, and "What is A + B?") right or wrong: each model named by --skill
// is right with its probability, every other model always. The choice is
// a hash of the seed, the model, the prompt and how many times that model
// was asked that prompt before, so a run's k-th repeat of a test gets the
// same answer whatever the order the requests arrive in, and a second run
// gets the same answers as the first.
type skilled struct {
	known map[string]harness.Expected // prompt → expected answer
	skill map[string]float64
	seed  uint64

	mu    sync.Mutex
	asked map[string]int // model NUL prompt → times asked
}

// loadAnswers reads a dataset file (JSONL or CSV by its extension, with an
// optional preset) and returns each row's prompt with its expected answer.
func loadAnswers(path, preset string) (map[string]harness.Expected, error) {
	format := ""
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		format = dataset.JSONL
	case ".csv":
		format = dataset.CSV
	default:
		return nil, fmt.Errorf("--answers %s: the file must end in .jsonl or .csv", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--answers: %w", err)
	}
	defer f.Close()
	res, err := dataset.Parse(f, dataset.Options{Format: format, Preset: preset, DomainID: "answers"})
	if err != nil {
		return nil, fmt.Errorf("--answers %s: %w", path, err)
	}
	if len(res.Errors) > 0 {
		return nil, fmt.Errorf("--answers %s: %w", path, res.Errors[0])
	}
	known := make(map[string]harness.Expected, len(res.Rows))
	for _, row := range res.Rows {
		known[strings.TrimSpace(row.Test.Prompt)] = row.Test.Expected
	}
	return known, nil
}

// respond is an llmtest.Options.Respond: it answers a known question, on
// its first asking in a conversation (not after tool results or in a
// follow-up), and leaves every other request to the mock's rules.
func (s *skilled) respond(req *llmtest.Request) *llmtest.Reply {
	if len(req.Messages) == 0 || req.Messages[len(req.Messages)-1].Role != harness.RoleUser {
		return nil
	}
	prompt := strings.TrimSpace(req.LastUser())
	exp, known := s.known[prompt]
	if !known {
		v, ok := llmtest.Arithmetic(prompt)
		if _, rated := s.skill[req.Model]; !ok || !rated {
			return nil
		}
		exp, known = harness.Expected{Answer: v, Type: "numeric"}, true
	}
	p, rated := s.skill[req.Model]
	if !rated {
		p = 1
	}
	s.mu.Lock()
	key := req.Model + "\x00" + prompt
	k := s.asked[key]
	s.asked[key] = k + 1
	s.mu.Unlock()
	if draw(s.seed, req.Model, prompt, k) < p {
		return &llmtest.Reply{Content: rightAnswer(exp)}
	}
	return &llmtest.Reply{Content: wrongAnswer(exp)}
}

// draw is a number in [0, 1) made from a hash of its arguments.
func draw(seed uint64, model, prompt string, k int) float64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(prompt))
	binary.LittleEndian.PutUint64(b[:], uint64(k))
	h.Write(b[:])
	return float64(h.Sum64()>>11) / (1 << 53)
}

// rightAnswer says the expected answer the way a model would.
func rightAnswer(exp harness.Expected) string {
	switch exp.Type {
	case "numeric", "integer", "choice":
		return "The answer is " + exp.Answer + "."
	}
	return exp.Answer
}

// wrongAnswer says an answer the expected one is not: a number off by
// one, the next letter of A–D, or a refusal.
func wrongAnswer(exp harness.Expected) string {
	switch exp.Type {
	case "numeric", "integer":
		if f, err := strconv.ParseFloat(strings.ReplaceAll(exp.Answer, ",", ""), 64); err == nil && !math.IsInf(f, 0) {
			return "The answer is " + strconv.FormatFloat(f+1, 'f', -1, 64) + "."
		}
	case "choice":
		if a := strings.ToUpper(strings.TrimSpace(exp.Answer)); len(a) == 1 && a[0] >= 'A' && a[0] <= 'D' {
			return "The answer is " + string(rune('A'+(a[0]-'A'+1)%4)) + "."
		}
	}
	return "I am not sure."
}

// newSkilled returns the Respond of --answers and --skill, nil when
// neither is given.
func newSkilled(answers, preset string, skill skillFlag, seed uint64) (func(*llmtest.Request) *llmtest.Reply, error) {
	if answers == "" && preset != "" {
		return nil, errors.New("--answers-preset needs --answers FILE")
	}
	if answers == "" && len(skill) == 0 {
		return nil, nil
	}
	s := &skilled{known: map[string]harness.Expected{}, skill: skill, seed: seed, asked: map[string]int{}}
	if answers != "" {
		known, err := loadAnswers(answers, preset)
		if err != nil {
			return nil, err
		}
		s.known = known
	}
	return s.respond, nil
}
