package host

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	good := install(t, dir, "evaluator", "gauntlet-evaluator-pinned")
	install(t, dir, "evaluator", "gauntlet-evaluator-wrong")
	install(t, dir, "evaluator", "gauntlet-evaluator-free")
	sum, err := fileSHA256(good)
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Repeat("ab", 32)
	m, reg := newManager(t, Options{Dir: dir, Checksums: map[string]string{
		"gauntlet-evaluator-pinned": "sha256:" + strings.ToUpper(sum),
		"gauntlet-evaluator-wrong":  wrong,
		"gauntlet-evaluator-absent": wrong,
	}})
	// Checked at discovery, before anything starts.
	for name, want := range map[string]ChecksumState{
		"gauntlet-evaluator-pinned": ChecksumOK, "gauntlet-evaluator-wrong": ChecksumMismatch, "gauntlet-evaluator-free": ChecksumUnpinned,
	} {
		if s := status(t, m, name); s.Checksum != want || s.Health != HealthStopped {
			t.Errorf("%s before any start: checksum %q health %q, want %q and stopped", name, s.Checksum, s.Health, want)
		}
	}

	for _, typ := range []string{"pinned", "free"} {
		ev, _ := reg.Evaluator(typ)
		if res, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); err != nil || res.Score != 1 {
			t.Errorf("%s: %+v, %v", typ, res, err)
		}
	}
	ev, _ := reg.Evaluator("wrong")
	_, err = ev.Evaluate(t.Context(), evalRequest("42", "42"))
	if !errors.Is(err, ErrChecksumMismatch) || !errors.Is(err, plugin.ErrUnavailable) || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), wrong) {
		t.Errorf("mismatch: %v", err)
	}
	s := status(t, m, "gauntlet-evaluator-wrong")
	if s.Health != HealthCrashed || s.PID != 0 || !s.Pinned || !strings.Contains(s.LastError, "checksum mismatch") ||
		s.Checksum != ChecksumMismatch || s.LastErrorAt.IsZero() {
		t.Errorf("status %+v", s)
	}
	if s := status(t, m, "gauntlet-evaluator-free"); s.Pinned || s.Checksum != ChecksumUnpinned || s.Health != HealthRunning {
		t.Errorf("status %+v", s)
	}
	if s := status(t, m, "gauntlet-evaluator-pinned"); !s.Pinned || s.Checksum != ChecksumOK || s.Health != HealthRunning || !s.LastErrorAt.IsZero() {
		t.Errorf("status %+v", s)
	}

	// A pinned file replaced after discovery is caught at its next start.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, _ := newManager(t, Options{Dir: dir, Checksums: map[string]string{"gauntlet-evaluator-pinned": sum}})
	if err := os.WriteFile(good, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m2.Start(t.Context(), "gauntlet-evaluator-pinned"); !errors.Is(err, ErrChecksumMismatch) {
		t.Errorf("start of a replaced file: %v, want ErrChecksumMismatch", err)
	}
	if s := status(t, m2, "gauntlet-evaluator-pinned"); s.Checksum != ChecksumMismatch {
		t.Errorf("after the replaced file's start: %+v", s)
	}

	// A malformed pin is a configuration error.
	for _, bad := range []string{"abc", strings.Repeat("zz", 32), ""} {
		_, err := New(Options{Dir: dir, Checksums: map[string]string{"gauntlet-evaluator-pinned": bad}})
		if !errors.Is(err, harness.ErrInvalid) {
			t.Errorf("checksum %q: %v, want ErrInvalid", bad, err)
		}
	}
}
