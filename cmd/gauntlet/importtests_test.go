package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestImportTestsCmd(t *testing.T) {
	ctx := context.Background()
	defs := t.TempDir()
	writeDef(t, defs, "domains/math/domain.yaml", "id: math\nname: Math\nenabled: true\n")
	writeDef(t, defs, "domains/mcq/domain.yaml", "id: mcq\nname: Quiz\nenabled: true\n")
	common := []string{"--definitions", defs, "--data", t.TempDir(), "--plugins", filepath.Join(t.TempDir(), "none")}
	call := func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := run(ctx, append(append([]string{"import-tests"}, args...), common...), &out, &errb)
		return out.String(), errb.String(), err
	}

	t.Run("gsm8k sample", func(t *testing.T) {
		out, _, err := call("../../examples/datasets/gsm8k-sample.jsonl", "--domain", "math", "--level", "1", "--preset", "gsm8k")
		if err != nil || !strings.Contains(out, "10 rows: 10 created, 0 updated, 0 skipped") {
			t.Fatalf("err %v, out %s", err, out)
		}
		data, err := os.ReadFile(filepath.Join(defs, "domains/math/level-1.yaml"))
		if err != nil || !strings.Contains(string(data), "answer: '1200'") && !strings.Contains(string(data), `answer: "1200"`) {
			t.Fatalf("level file: %v\n%s", err, data)
		}
		// Again: the same ids, updated.
		out, _, err = call("../../examples/datasets/gsm8k-sample.jsonl", "--domain", "math", "--level", "1", "--preset", "gsm8k")
		if err != nil || !strings.Contains(out, "0 created, 10 updated") {
			t.Fatalf("err %v, out %s", err, out)
		}
	})
	t.Run("mmlu sample, flags first", func(t *testing.T) {
		out, _, err := call("--domain", "mcq", "--level", "1", "--preset", "mmlu", "../../examples/datasets/mmlu-sample.csv")
		if err != nil || !strings.Contains(out, "10 rows: 10 created") {
			t.Fatalf("err %v, out %s", err, out)
		}
	})
	t.Run("refused rows write nothing, exit 1", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "bad.csv")
		os.WriteFile(f, []byte("q;a\nok;1\nno answer;\n"), 0o644)
		out, _, err := call(f, "--domain", "math", "--level", "2", "--delimiter", ";", "--map", "prompt=q,answer=a")
		if !errors.Is(err, errInvalidDefinitions) || !strings.Contains(out, `bad.csv:3: row 2: column "a": is empty`) ||
			!strings.Contains(out, "1 of 2 rows refused; nothing written") {
			t.Fatalf("err %v, out %s", err, out)
		}
		if _, err := os.Stat(filepath.Join(defs, "domains/math/level-2.yaml")); !os.IsNotExist(err) {
			t.Fatalf("level-2.yaml written: %v", err)
		}
		out, _, err = call(f, "--domain", "math", "--level", "2", "--delimiter", ";", "--map", "prompt=q,answer=a", "--skip-invalid")
		if err != nil || !strings.Contains(out, "2 rows: 1 created, 0 updated, 1 skipped") {
			t.Fatalf("err %v, out %s", err, out)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no file", []string{"--domain", "math", "--level", "1"}, "give the dataset file"},
		{"no domain", []string{"x.jsonl", "--level", "1"}, "--domain is required"},
		{"no level", []string{"x.jsonl", "--domain", "math"}, "--level is required"},
		{"unknown extension", []string{"x.txt", "--domain", "math", "--level", "1"}, "--format"},
		{"bad map", []string{"x.jsonl", "--domain", "math", "--level", "1", "--map", "prompt"}, "field=column"},
		{"extra argument", []string{"x.jsonl", "--domain", "math", "--level", "1", "y"}, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := call(tc.args...)
			if !errors.Is(err, errUsage) || !strings.Contains(stderr, tc.want) {
				t.Fatalf("err %v, stderr %s", err, stderr)
			}
		})
	}
	t.Run("unknown domain", func(t *testing.T) {
		_, _, err := call("../../examples/datasets/gsm8k-sample.jsonl", "--domain", "nope", "--level", "1", "--preset", "gsm8k")
		if err == nil || !strings.Contains(err.Error(), `unknown domain "nope"`) {
			t.Fatalf("err %v", err)
		}
	})
}
