// Command evaluator is the evaluator plugin of the host's tests. What it
// does depends on the response it is asked to score (see Evaluate).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

type evaluator struct{}

func (evaluator) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, fmt.Errorf("nil request: %w", harness.ErrInvalid)
	}
	details := map[string]any{"pid": os.Getpid(), "response": req.Response}
	if len(req.Test.Expected.Sources) > 0 {
		details["expected_sources"] = req.Test.Expected.Sources
	}
	if tr := req.Test.Expected.Trajectory; tr != nil {
		// The kit's matching, as a plugin author calls it.
		res, err := harness.MatchTrajectory(*tr, req.ToolCalls)
		if err != nil {
			return nil, err
		}
		details["expected_trajectory"] = tr
		details["trajectory"] = res.Details()
	}
	if r := req.Retrieval; r != nil {
		var sources []string
		for _, s := range r.Sources {
			sources = append(sources, fmt.Sprintf("%s#%d@%g", s.File, s.Chunk, s.Score))
		}
		details["retrieval"] = map[string]any{"mode": r.Mode, "fallback": r.Fallback, "text": r.Text, "sources": sources}
	}
	if dir, _ := req.Evaluator.Config["ready_dir"].(string); dir != "" && req.Response == "block" {
		// Tell the test this call has arrived.
		f, err := os.CreateTemp(dir, "call")
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	if gate, _ := req.Evaluator.Config["gate"].(float64); gate > 0 && strings.HasPrefix(req.Response, "gate") {
		// Wait until gate calls have arrived (files in ready_dir), so that
		// they are all in flight together; then "gate-exit" writes its pid
		// to the marker file and ends the process with status 2, and the
		// others wait for a marker written by another process than theirs:
		// they die with the process, and score when retried on the next.
		dir, _ := req.Evaluator.Config["ready_dir"].(string)
		f, err := os.CreateTemp(dir, "gate")
		if err != nil {
			return nil, err
		}
		f.Close()
		for {
			entries, _ := os.ReadDir(dir)
			if len(entries) >= int(gate) {
				break
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		marker, _ := req.Evaluator.Config["marker"].(string)
		if req.Response == "gate-exit" {
			_ = os.WriteFile(marker, []byte(strconv.Itoa(os.Getpid())), 0o644)
			os.Exit(2)
		}
		for {
			b, err := os.ReadFile(marker)
			if err == nil && len(b) > 0 && string(b) != strconv.Itoa(os.Getpid()) {
				break
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	switch req.Response {
	case "judge":
		if req.Client == nil {
			return nil, errors.New("judge: no model")
		}
		resp, err := req.Client.Chat(ctx, &harness.ChatRequest{
			Model:    req.Model,
			Messages: []harness.Message{{Role: harness.RoleUser, Content: "grade: " + req.Test.Prompt}},
		})
		if err != nil {
			return nil, fmt.Errorf("judge: %w", err)
		}
		score, err := strconv.ParseFloat(strings.TrimSpace(resp.Message.Content), 64)
		if err != nil {
			return nil, fmt.Errorf("judge: verdict %q: %w", resp.Message.Content, err)
		}
		details["verdict"] = resp.Message.Content
		return &harness.EvalResult{Score: score, Passed: score >= 0.5, Details: details, Usage: resp.Usage}, nil
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	case "hang":
		time.Sleep(time.Hour)
	case "deadline":
		dl, ok := ctx.Deadline()
		if !ok {
			return nil, errors.New("no deadline")
		}
		details["deadline_ms"] = time.Until(dl).Milliseconds()
	case "invalid":
		return nil, harness.Invalid("config.keywords", "is required")
	case "invalid-wrapped":
		return nil, fmt.Errorf("check config: %w", harness.Invalid("config.keywords", "is required"))
	case "notfound":
		return nil, fmt.Errorf("rubric %q: %w", "r1", harness.ErrNotFound)
	case "conflict":
		return nil, fmt.Errorf("busy: %w", harness.ErrConflict)
	case "unauthorized":
		return nil, fmt.Errorf("judge key: %w", harness.ErrUnauthorized)
	case "unavailable":
		return nil, fmt.Errorf("judge endpoint down: %w", plugin.ErrUnavailable)
	case "plain":
		return nil, errors.New("something else went wrong")
	case "log":
		slog.Warn("plugin says", "answer", 42)
		fmt.Println("printed on stdout")
		log.Print("via the log package")
	case "panic":
		panic("boom")
	case "exit":
		os.Exit(3)
	case "pid-file":
		// Writes the pid where the test can read it, then scores.
		dir, _ := req.Evaluator.Config["dir"].(string)
		_ = os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	score := 0.0
	if req.Response == req.Test.Expected.Answer {
		score = 1
	}
	return &harness.EvalResult{Score: score, Passed: score == 1, Details: details}, nil
}

// ValidateConfig refuses mode "bad".
func (evaluator) ValidateConfig(cfg harness.EvaluatorConfig) error {
	if mode, _ := cfg.Config["mode"].(string); mode == "bad" {
		ve := &harness.ValidationError{}
		ve.Fields = append(ve.Fields, harness.FieldError{Field: "config.mode", Message: "must not be bad", Value: mode})
		return ve
	}
	return nil
}

func main() { plugin.Serve(&plugin.ServeOpts{Evaluator: evaluator{}, Version: "1.2.3"}) }
