package plugin_test

import (
	"context"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

// shout passes responses written in capitals.
type shout struct{}

func (shout) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, harness.ErrInvalid
	}
	if req.Response != "" && req.Response == strings.ToUpper(req.Response) {
		return &harness.EvalResult{Score: 1, Passed: true}, nil
	}
	return &harness.EvalResult{}, nil
}

// The main function of an evaluator plugin, built as
// plugins/gauntlet-evaluator-shout.
func ExampleServeEvaluator() {
	plugin.ServeEvaluator(shout{})
}

// Serve, to report a name and version of one's own.
func ExampleServe() {
	plugin.Serve(&plugin.ServeOpts{Evaluator: shout{}, Name: "shout", Version: "1.0.0"})
}
