package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateTargets: gauntlet validate checks targets/*.yaml as it
// checks the other files: an unknown key and a bad placeholder at their
// lines, a secret written in clear refused.
func TestValidateTargets(t *testing.T) {
	ctx := context.Background()
	dir := exampleDefs(t)
	writeDef(t, dir, "targets/typo.yaml", "url: http://127.0.0.1:9/chat\nmethdo: POST\nbody: '{{prompt}}'\nresponse: /answer\n")
	writeDef(t, dir, "targets/clear.yaml", "url: http://127.0.0.1:9/chat\nheaders:\n  Authorization: Bearer sk-live\nbody:\n  q: '{{promt}}'\nresponse: /answer\n")
	var out strings.Builder
	err := run(ctx, []string{"validate", "--definitions", dir, "--plugins", filepath.Join(t.TempDir(), "none")}, &out, io.Discard)
	if !errors.Is(err, errInvalidDefinitions) {
		t.Fatalf("err = %v, want errInvalidDefinitions", err)
	}
	for _, want := range []string{
		filepath.Join(dir, "targets", "typo.yaml") + `:2: unknown key "methdo" (did you mean "method"?)`,
		filepath.Join(dir, "targets", "clear.yaml") + ":3: ",
		"carries credentials",
		"unknown placeholder {{promt}} (did you mean {{prompt}}?)",
		"of 19 files",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not say %q:\n%s", want, out.String())
		}
	}
}
