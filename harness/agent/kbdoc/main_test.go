package kbdoc_test

import (
	"os"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
)

// TestMain lets the test binary serve as the extraction child.
func TestMain(m *testing.M) {
	kbdoc.RunIfChild()
	os.Exit(m.Run())
}
