package harness

import (
	"encoding/json"
	"fmt"
	"math"
)

// MaxParamTokens is the largest max_tokens a Params accepts: far above
// any model's output window, low enough to catch a value typed wrong.
const MaxParamTokens = 1 << 20

// Params are the sampling parameters sent with every model request of a
// run: each nil field is left to the endpoint's default and not sent. A
// level may set defaults (LevelConfig.Params); a run's own parameters
// override them field by field (see Merge).
type Params struct {
	// Temperature is the sampling temperature, 0 to 2.
	Temperature *float64 `json:"temperature,omitempty" yaml:"temperature,omitempty"`
	// TopP is the nucleus sampling mass, greater than 0 and at most 1.
	TopP *float64 `json:"top_p,omitempty" yaml:"top_p,omitempty"`
	// MaxTokens bounds the tokens of each answer, 1 to MaxParamTokens.
	MaxTokens *int `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
	// Seed asks the endpoint for reproducible sampling; any value. Not
	// every endpoint honours it.
	Seed *int64 `json:"seed,omitempty" yaml:"seed,omitempty"`
	// Reasoning asks the model to think before it answers: an effort or a
	// budget of tokens, one of the two.
	Reasoning *ReasoningParams `json:"reasoning,omitempty" yaml:"reasoning,omitempty"`
}

// Reasoning efforts (ReasoningParams.Effort).
const (
	EffortLow    = "low"
	EffortMedium = "medium"
	EffortHigh   = "high"
)

// ReasoningParams ask a model to think before it answers. Exactly one of
// the fields is set. (The enum, minimum and doc tags describe the fields
// in the server's OpenAPI document.) Each provider kind maps them to its own field: an
// OpenAI-compatible endpoint gets reasoning_effort (a budget is sent as
// the nearest effort), Anthropic thinking.budget_tokens (an effort as a
// budget of 1,024, 4,096 or 16,384 tokens), Gemini
// thinkingConfig.thinkingBudget (likewise).
type ReasoningParams struct {
	// Effort is low, medium or high.
	Effort string `json:"effort,omitempty" yaml:"effort,omitempty" enum:"low,medium,high" doc:"low, medium or high."`
	// BudgetTokens is the tokens the model may spend thinking, 1 to
	// MaxParamTokens.
	BudgetTokens int `json:"budget_tokens,omitempty" yaml:"budget_tokens,omitempty" minimum:"1" maximum:"1048576" doc:"Tokens the model may spend thinking, 1 to 1048576."`
}

// Budget returns the budget of tokens the parameters ask for: BudgetTokens
// when set, else the budget an effort stands for.
func (r ReasoningParams) Budget() int {
	if r.BudgetTokens > 0 {
		return r.BudgetTokens
	}
	switch r.Effort {
	case EffortLow:
		return 1024
	case EffortHigh:
		return 16384
	}
	return 4096
}

// EffortLevel returns the effort the parameters ask for: Effort when set,
// else the effort nearest a budget of tokens.
func (r ReasoningParams) EffortLevel() string {
	if r.Effort != "" {
		return r.Effort
	}
	switch {
	case r.BudgetTokens <= 2048:
		return EffortLow
	case r.BudgetTokens <= 8192:
		return EffortMedium
	}
	return EffortHigh
}

// IsZero reports whether no parameter is set.
func (p Params) IsZero() bool {
	return p.Temperature == nil && p.TopP == nil && p.MaxTokens == nil && p.Seed == nil && p.Reasoning == nil
}

// Validate checks the ranges of the parameters that are set. Its field
// errors name the JSON keys (temperature, top_p, max_tokens); callers
// prefix them with where the parameters came from ("params").
func (p Params) Validate() error {
	ve := &ValidationError{}
	if t := p.Temperature; t != nil && !(*t >= 0 && *t <= 2) { // also refuses NaN
		ve.Add("temperature", "must be between 0 and 2")
	}
	if t := p.TopP; t != nil && !(*t > 0 && *t <= 1) {
		ve.Add("top_p", "must be greater than 0 and at most 1")
	}
	if m := p.MaxTokens; m != nil && (*m < 1 || *m > MaxParamTokens) {
		ve.Add("max_tokens", "must be between 1 and %d", MaxParamTokens)
	}
	if r := p.Reasoning; r != nil {
		switch {
		case r.Effort != "" && r.BudgetTokens != 0:
			ve.Add("reasoning", "set effort or budget_tokens, not both")
		case r.Effort == "" && r.BudgetTokens == 0:
			ve.Add("reasoning", "needs effort (low, medium or high) or budget_tokens")
		case r.Effort != "" && r.Effort != EffortLow && r.Effort != EffortMedium && r.Effort != EffortHigh:
			ve.Add("reasoning.effort", "must be low, medium or high, not %q", r.Effort)
		case r.Effort == "" && (r.BudgetTokens < 1 || r.BudgetTokens > MaxParamTokens):
			ve.Add("reasoning.budget_tokens", "must be between 1 and %d", MaxParamTokens)
		}
	}
	return ve.Err()
}

// Merge returns p with the fields set in over replacing its own: the
// run's parameters (over) win over a level's defaults (p).
func (p Params) Merge(over Params) Params {
	if over.Temperature != nil {
		p.Temperature = over.Temperature
	}
	if over.TopP != nil {
		p.TopP = over.TopP
	}
	if over.MaxTokens != nil {
		p.MaxTokens = over.MaxTokens
	}
	if over.Seed != nil {
		p.Seed = over.Seed
	}
	if over.Reasoning != nil {
		p.Reasoning = over.Reasoning
	}
	return p
}

// Apply sets the parameters that are set on a chat request; the others
// keep the request's values.
func (p Params) Apply(req *ChatRequest) {
	if p.Temperature != nil {
		t := *p.Temperature
		req.Temperature = &t
	}
	if p.TopP != nil {
		t := *p.TopP
		req.TopP = &t
	}
	if p.MaxTokens != nil {
		req.MaxTokens = *p.MaxTokens
	}
	if p.Seed != nil {
		s := *p.Seed
		req.Seed = &s
	}
	if p.Reasoning != nil {
		r := *p.Reasoning
		req.Reasoning = &r
	}
}

// Map returns the parameters as a JSON object holding only the keys that
// are set (empty, never nil, when none is).
func (p Params) Map() map[string]any {
	m := map[string]any{}
	if p.Temperature != nil {
		m["temperature"] = *p.Temperature
	}
	if p.TopP != nil {
		m["top_p"] = *p.TopP
	}
	if p.MaxTokens != nil {
		m["max_tokens"] = *p.MaxTokens
	}
	if p.Seed != nil {
		m["seed"] = *p.Seed
	}
	if r := p.Reasoning; r != nil {
		rm := map[string]any{}
		if r.Effort != "" {
			rm["effort"] = r.Effort
		}
		if r.BudgetTokens != 0 {
			rm["budget_tokens"] = r.BudgetTokens
		}
		m["reasoning"] = rm
	}
	return m
}

// ParamsFromMap reads parameters back from a JSON object such as Map
// returns (numbers as float64, json.Number or Go integers). Unknown keys
// are ignored; a value of the wrong type is an error. A seed beyond 2^53
// keeps its exact value only when it comes as a json.Number or an integer.
func ParamsFromMap(m map[string]any) (Params, error) {
	var p Params
	if len(m) == 0 {
		return p, nil
	}
	norm := make(map[string]any, len(m))
	for k, v := range m {
		if f, ok := v.(float64); ok && (k == "seed" || k == "max_tokens") && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			// A float64 from a plain JSON decode: write it as an integer
			// so that it reads back into an integer field.
			v = json.Number(fmt.Sprintf("%d", int64(f)))
		}
		norm[k] = v
	}
	b, err := json.Marshal(norm)
	if err != nil {
		return p, fmt.Errorf("params: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("params: %w", err)
	}
	return p, nil
}
