package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Keyword is the "keyword" evaluator type: the score is the share of the
// expected keywords found in the response, and the response passes when
// that share reaches pass_threshold. Its settings, in the evaluator
// record's config, are those of Config.
//
// It keeps no state, so it is safe for concurrent use.
type Keyword struct{}

var (
	_ harness.Evaluator       = Keyword{}
	_ harness.ConfigValidator = Keyword{}
)

// Config is the config of an evaluator record of type keyword. It is
// decoded with harness.DecodeConfig, which reports a value of the wrong
// type or an unknown key, and calls Validate for the rest.
type Config struct {
	// Keywords are the keywords to look for. When absent, the test's
	// expected answer, split on commas, gives them.
	Keywords []string `json:"keywords,omitempty"`
	// CaseSensitive matches case exactly (default false).
	CaseSensitive bool `json:"case_sensitive,omitempty"`
	// PassThreshold is the share of the keywords a response needs to pass,
	// more than 0 and at most 1 (default 1: all of them).
	PassThreshold float64 `json:"pass_threshold"`
}

// Validate checks the values: no keyword is blank, and PassThreshold is
// in (0, 1]. Field names are relative to the config.
func (c *Config) Validate() error {
	ve := &harness.ValidationError{}
	for i, k := range c.Keywords {
		if strings.TrimSpace(k) == "" {
			ve.Add(fmt.Sprintf("keywords[%d]", i), "must be a non-empty string")
		}
	}
	if !(c.PassThreshold > 0 && c.PassThreshold <= 1) {
		ve.Add("pass_threshold", "must be more than 0 and at most 1")
	}
	return ve.Err()
}

// parseConfig reads an evaluator record's config: strict (an unknown key
// is an error) when the record is checked before it is stored, lenient
// when a stored record is used to score. Its errors name the offending
// fields ("config.keywords[1]").
func parseConfig(m map[string]any, strict bool) (Config, error) {
	cfg := Config{PassThreshold: 1}
	if err := (harness.ConfigDecoder{IgnoreUnknown: !strict}).Decode(m, &cfg); err != nil {
		return Config{}, err
	}
	for i, k := range cfg.Keywords {
		cfg.Keywords[i] = strings.TrimSpace(k)
	}
	return cfg, nil
}

// ValidateConfig checks an evaluator record of type keyword before it is
// stored.
func (Keyword) ValidateConfig(e harness.EvaluatorConfig) error {
	_, err := parseConfig(e.Config, true)
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
	cfg, err := parseConfig(req.Evaluator.Config, false)
	if err != nil {
		return nil, err
	}
	keywords := cfg.Keywords
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
	if !cfg.CaseSensitive {
		response = strings.ToLower(response)
	}
	found, missing := []string{}, []string{}
	for _, k := range keywords {
		needle := k
		if !cfg.CaseSensitive {
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
		Passed: score >= cfg.PassThreshold,
		Details: map[string]any{
			"found":            found,
			"missing":          missing,
			"extracted_answer": strings.Join(found, ", "),
		},
	}, nil
}
