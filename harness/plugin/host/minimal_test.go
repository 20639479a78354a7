package host

import (
	"errors"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// A plugin written without the SDK needs only what the protocol requires
// of it: Info and its kind's service. Without Attach it gets no callbacks,
// without ValidateConfig its records are accepted, and a plain status
// error keeps the kind its code says.
func TestMinimalPlugin(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "minimal", "gauntlet-evaluator-minimal")
	m, reg := newManager(t, Options{Dir: dir})
	ev, _ := reg.Evaluator("minimal")
	res, err := ev.Evaluate(t.Context(), evalRequest("42", "42"))
	if err != nil || res.Score != 1 || !res.Passed {
		t.Fatalf("Evaluate: %+v, %v", res, err)
	}
	if _, err := ev.Evaluate(t.Context(), evalRequest("bad", "42")); !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("a plain INVALID_ARGUMENT: %v, want ErrInvalid", err)
	}
	if err := ev.(harness.ConfigValidator).ValidateConfig(harness.EvaluatorConfig{ID: "m", Type: "minimal"}); err != nil {
		t.Errorf("ValidateConfig of a plugin without it: %v", err)
	}
	s := status(t, m, "gauntlet-evaluator-minimal")
	if s.Health != HealthRunning || s.Version != "0.1.0" || s.Restarts != 0 || s.SecretFields != nil {
		t.Errorf("status %+v", s)
	}
}
