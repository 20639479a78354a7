package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Keyword is the "keyword" evaluator type: the score is the share of the
// expected keywords found in the response, and the response passes when
// that share reaches pass_threshold.
//
// Its config, in the evaluator record:
//
//	keywords        the keywords (strings); when absent, the test's
//	                expected answer, split on commas
//	case_sensitive  match case exactly (default false)
//	pass_threshold  the share needed to pass, in (0, 1] (default 1: all)
//
// It keeps no state, so it is safe for concurrent use.
type Keyword struct{}

var (
	_ harness.Evaluator       = Keyword{}
	_ harness.ConfigValidator = Keyword{}
)

type config struct {
	keywords      []string
	caseSensitive bool
	threshold     float64
}

// parseConfig reads and checks an evaluator record's config; its errors
// name the offending fields.
func parseConfig(m map[string]any) (config, error) {
	cfg := config{threshold: 1}
	ve := &harness.ValidationError{}
	switch v := m["keywords"].(type) {
	case nil:
	case []any:
		for i, k := range v {
			s, ok := k.(string)
			if !ok || strings.TrimSpace(s) == "" {
				ve.Add(fmt.Sprintf("config.keywords[%d]", i), "must be a non-empty string")
				continue
			}
			cfg.keywords = append(cfg.keywords, strings.TrimSpace(s))
		}
	case []string: // from Go code rather than JSON
		for i, s := range v {
			if strings.TrimSpace(s) == "" {
				ve.Add(fmt.Sprintf("config.keywords[%d]", i), "must be a non-empty string")
				continue
			}
			cfg.keywords = append(cfg.keywords, strings.TrimSpace(s))
		}
	default:
		ve.Add("config.keywords", "must be a list of strings")
	}
	switch v := m["case_sensitive"].(type) {
	case nil:
	case bool:
		cfg.caseSensitive = v
	default:
		ve.Add("config.case_sensitive", "must be true or false")
	}
	switch v := m["pass_threshold"].(type) {
	case nil:
	case float64:
		if !(v > 0 && v <= 1) {
			ve.Add("config.pass_threshold", "must be more than 0 and at most 1")
		}
		cfg.threshold = v
	default:
		ve.Add("config.pass_threshold", "must be a number")
	}
	return cfg, ve.Err()
}

// ValidateConfig checks an evaluator record of type keyword before it is
// stored.
func (Keyword) ValidateConfig(e harness.EvaluatorConfig) error {
	_, err := parseConfig(e.Config)
	return err
}

// Evaluate scores req.Response.
func (Keyword) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, fmt.Errorf("keyword: nil request: %w", harness.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg, err := parseConfig(req.Evaluator.Config)
	if err != nil {
		return nil, err
	}
	keywords := cfg.keywords
	if len(keywords) == 0 {
		for _, k := range strings.Split(req.Test.Expected.Answer, ",") {
			if k = strings.TrimSpace(k); k != "" {
				keywords = append(keywords, k)
			}
		}
	}
	if len(keywords) == 0 {
		return nil, harness.Invalid("config.keywords", "is required when the test's expected answer names no keywords")
	}

	response := req.Response
	if !cfg.caseSensitive {
		response = strings.ToLower(response)
	}
	found, missing := []string{}, []string{}
	for _, k := range keywords {
		needle := k
		if !cfg.caseSensitive {
			needle = strings.ToLower(k)
		}
		if strings.Contains(response, needle) {
			found = append(found, k)
		} else {
			missing = append(missing, k)
		}
	}
	score := float64(len(found)) / float64(len(keywords))
	return &harness.EvalResult{
		Score:  score,
		Passed: score >= cfg.threshold,
		Details: map[string]any{
			"found":            found,
			"missing":          missing,
			"extracted_answer": strings.Join(found, ", "),
		},
	}, nil
}
