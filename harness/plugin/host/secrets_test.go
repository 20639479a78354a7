package host

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// A plugin's declared secret config keys reach the host through Info: the
// shim learns them by starting the plugin when it has not run yet. A
// plugin that declares nothing (built before the declaration existed)
// gives nil, which leaves the caller to its default rule.
func TestSecretFields(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "channel", "gauntlet-channel-declared")
	install(t, dir, "channel", "gauntlet-channel-old-legacy")
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(t, Options{Dir: dir})

	declared, _ := reg.Channel("declared")
	if s := status(t, m, "gauntlet-channel-declared"); s.Health != HealthStopped || s.SecretFields != nil {
		t.Fatalf("before use: %+v", s)
	}
	got, declares := harness.DeclaredSecrets(declared)
	if want := []string{"api_key", "secret", "auth.password"}; !declares || !slices.Equal(got, want) {
		t.Errorf("declared: %v %v, want %v", got, declares, want)
	}
	if s := status(t, m, "gauntlet-channel-declared"); s.Health != HealthRunning || !slices.Equal(s.SecretFields, []string{"api_key", "secret", "auth.password"}) {
		t.Errorf("after asking: %+v", s)
	}

	legacy, _ := reg.Channel("old-legacy")
	if got, declares := harness.DeclaredSecrets(legacy); declares || got != nil {
		t.Errorf("legacy: %v %v, want nothing declared", got, declares)
	}
	ev, _ := reg.Evaluator("testeval")
	if got, declares := harness.DeclaredSecrets(ev); declares || got != nil {
		t.Errorf("evaluator: %v %v, want nothing declared", got, declares)
	}
	if s := status(t, m, "gauntlet-channel-old-legacy"); s.Health != HealthRunning || s.SecretFields != nil {
		t.Errorf("legacy status: %+v", s)
	}
}

// A plugin that cannot start declares nothing: the caller's default rule
// applies, and the failure shows in the plugin's status.
func TestSecretFieldsOfABrokenPlugin(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gauntlet-channel-broken"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, reg := newManager(t, Options{Dir: dir, StartTimeout: 2 * time.Second})
	ch, _ := reg.Channel("broken")
	if got, declares := harness.DeclaredSecrets(ch); declares || got != nil {
		t.Errorf("broken: %v %v", got, declares)
	}
	if s := status(t, m, "gauntlet-channel-broken"); s.Health != HealthCrashed || s.LastError == "" || s.LastErrorAt.IsZero() {
		t.Errorf("status %+v", s)
	}
}
