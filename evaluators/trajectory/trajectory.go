package trajectory

import (
	"context"
	"fmt"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Type is the evaluator type an evaluator record names to use this
// evaluator, and the name a plugin executable of it carries
// (gauntlet-evaluator-trajectory).
const Type = "trajectory"

// ExpectedType is the expected answer type of tests that check the
// trajectory alone: they need no expected answer, and must have an
// expected.trajectory. RegisterExpectedType makes it valid in a Registry.
const ExpectedType = "trajectory"

// RegisterExpectedType registers ExpectedType in reg, with CheckExpected
// as its write-time check.
func RegisterExpectedType(reg *harness.Registry) error {
	return reg.RegisterExpectedType(ExpectedType, CheckExpected)
}

// CheckExpected is the write-time check of ExpectedType: the test must
// have an expected.trajectory (which the harness validates whatever the
// type); any answer, including none, is valid. It is a
// harness.ExpectedChecker.
func CheckExpected(exp harness.Expected) error {
	if exp.Trajectory == nil {
		return harness.Invalid("trajectory", "is required for expected type %s: the tool calls the model should make", ExpectedType)
	}
	return nil
}

// Config is the config of an evaluator record of type trajectory: the
// evaluator has no settings, since each test's expected.trajectory says
// what to check. The config must be empty or absent.
type Config struct{}

// Evaluator scores the tool calls of a response against the test's
// expected.trajectory. It implements harness.Evaluator and
// harness.ConfigValidator, holds no state, and is safe for concurrent use.
type Evaluator struct{}

var (
	_ harness.Evaluator       = (*Evaluator)(nil)
	_ harness.ConfigValidator = (*Evaluator)(nil)
)

// New returns an Evaluator.
func New() *Evaluator { return &Evaluator{} }

// ValidateConfig checks an evaluator record of this type: any config key
// is an error naming it. It implements harness.ConfigValidator.
func (e *Evaluator) ValidateConfig(cfg harness.EvaluatorConfig) error {
	return harness.DecodeConfig(cfg.Config, &Config{})
}

// Evaluate compares req.ToolCalls with req.Test.Expected.Trajectory by
// harness.MatchTrajectory (see the package documentation for the modes
// and the score). Details hold trajectory (the TrajectoryResult as JSON),
// extracted_answer (the names of the calls made, comma-separated) and,
// when the test failed, reason.
//
// Calls that fail the trajectory, none at all, or arguments that are not
// JSON make a failed test, not an error. Evaluate returns an error
// wrapping harness.ErrInvalid when the test has no trajectory or an
// invalid one.
func (e *Evaluator) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, fmt.Errorf("trajectory: nil request: %w", harness.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tr := req.Test.Expected.Trajectory
	if tr == nil {
		return nil, fmt.Errorf("trajectory: test %s has no expected.trajectory to score the tool calls against: %w",
			req.Test.ID, harness.ErrInvalid)
	}
	res, err := harness.MatchTrajectory(*tr, req.ToolCalls)
	if err != nil {
		return nil, fmt.Errorf("trajectory: test %s: %w", req.Test.ID, err)
	}
	names := make([]string, len(req.ToolCalls))
	for i, c := range req.ToolCalls {
		names[i] = c.Name
	}
	details := map[string]any{
		"trajectory":       res.Details(),
		"extracted_answer": strings.Join(names, ", "),
	}
	if !res.Passed {
		details["reason"] = res.Reason
	}
	return &harness.EvalResult{Score: res.Score, Passed: res.Passed, Details: details}, nil
}
