package harnesstest_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/regexeval"
)

// The kits pass for good implementations, first-party ones included.

func TestGoodEvaluators(t *testing.T) {
	t.Run("exact/generic", func(t *testing.T) { harnesstest.TestEvaluator(t, exact{}) })
	t.Run("exact/cases", func(t *testing.T) {
		req := &harness.EvalRequest{Test: harness.Test{Expected: harness.Expected{Answer: "4"}}, Response: " 4 "}
		wrong := *req
		wrong.Response = "5"
		harnesstest.TestEvaluator(t, exact{},
			harnesstest.EvalCase{Name: "right", Request: req, Want: &harnesstest.Verdict{Score: 1, Passed: true}},
			harnesstest.EvalCase{Name: "wrong", Request: &wrong, Want: &harnesstest.Verdict{}},
		)
	})
	t.Run("judge", func(t *testing.T) { harnesstest.TestEvaluator(t, judge{}) })
	t.Run("regexeval", func(t *testing.T) { harnesstest.TestEvaluator(t, regexeval.New(regexeval.Options{})) })
	t.Run("regexeval/pass2", func(t *testing.T) {
		req := &harness.EvalRequest{
			Test:      harness.Test{ID: "t", Expected: harness.Expected{Answer: "4", Type: "integer"}},
			Evaluator: harness.EvaluatorConfig{ID: "e", Name: "e", Type: "regex", ExtractionRegex: `ANSWER: (\d+)`, UsesPass2: true},
			Response:  "I think it is four.",
			Client:    fixedModel("ANSWER: 4"), Model: "m",
		}
		harnesstest.TestEvaluator(t, regexeval.New(regexeval.Options{}),
			harnesstest.EvalCase{Name: "second pass", Request: req, Want: &harnesstest.Verdict{Score: 1, Passed: true}})
	})
}

func TestGoodChannels(t *testing.T) {
	push := func(ctx context.Context, run *harness.ChannelRun) error {
		_, err := pushChannel{}.Receive(ctx, run, &harness.InboundRequest{Body: []byte(`{"user":"1","text":"hi"}`)})
		return err
	}
	t.Run("push", func(t *testing.T) {
		harnesstest.TestChannel(t, pushChannel{}, harnesstest.ChannelCase{Name: "relay", Config: map[string]any{"prefix": "x"}, Send: push})
	})
	t.Run("push/generic", func(t *testing.T) { harnesstest.TestChannel(t, pushChannel{}) })
	t.Run("webhook", func(t *testing.T) {
		ch := webhook.New(webhook.Options{Logger: discard()})
		send := func(ctx context.Context, run *harness.ChannelRun) error {
			body, _ := json.Marshal(map[string]string{"user_id": "u1", "message": "hello"})
			_, err := ch.Receive(ctx, run, &harness.InboundRequest{Body: body, Header: map[string][]string{
				webhook.SignatureHeader: {webhook.Sign("s3cret", body)},
			}})
			return err
		}
		harnesstest.TestChannel(t, ch, harnesstest.ChannelCase{Name: "synchronous", Config: map[string]any{"secret": "s3cret"}, Send: send})
	})
}

func TestGoodTools(t *testing.T) {
	t.Run("add/generic", func(t *testing.T) { harnesstest.TestTool(t, add{}) })
	t.Run("add/cases", func(t *testing.T) {
		harnesstest.TestTool(t, add{},
			harnesstest.ToolCase{Name: "sum", Arguments: `{"a":2,"b":2}`},
			harnesstest.ToolCase{Name: "missing b", Arguments: `{"a":2}`, WantErr: true},
		)
	})
}

// The kits fail for broken implementations, each with the checks that
// must catch it. The broken runs happen in a child process (this test
// binary, running TestBroken), so that their failures are real test
// failures with real *testing.T, reported on its output.
func TestKitsCatchBrokenImplementations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBroken$", "-test.v", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), "HARNESSTEST_BROKEN=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the broken implementations passed:\n%s", out)
	}
	failed := map[string]bool{}
	for _, m := range regexp.MustCompile(`--- FAIL: TestBroken/(\S+)`).FindAllStringSubmatch(string(out), -1) {
		failed[m[1]] = true
	}
	for impl, checks := range brokenCases() {
		if !failed[impl] {
			t.Errorf("%s passed its kit", impl)
		}
		for _, check := range checks.fail {
			if !failed[impl+"/"+check] {
				t.Errorf("%s: check %s did not fail", impl, check)
			}
		}
		for _, check := range checks.pass {
			if failed[impl+"/"+check] {
				t.Errorf("%s: check %s failed, but the implementation keeps that rule", impl, check)
			}
		}
	}
	// Nothing else failed: no unexpected check, and no crash.
	var unexpected []string
	for name := range failed {
		impl, check, _ := strings.Cut(name, "/")
		if check == "" {
			continue
		}
		bc, ok := brokenCases()[impl]
		if !ok || !contains(bc.fail, check) && !contains(bc.may, check) {
			unexpected = append(unexpected, name)
		}
	}
	sort.Strings(unexpected)
	if len(unexpected) > 0 {
		t.Errorf("unexpected failures: %v", unexpected)
	}
	if strings.Contains(string(out), "panic: ") && !strings.Contains(string(out), "panicked:") {
		t.Errorf("the child crashed:\n%s", out)
	}
	if t.Failed() {
		t.Logf("child output:\n%s", out)
	}
}

type broken struct {
	run  func(t *testing.T)
	fail []string // the checks that must fail
	pass []string // checks that must not
	may  []string // checks that may fail too (for other reasons)
}

func brokenCases() map[string]broken {
	n := 0
	bc := map[string]broken{
		"score-out-of-range": {
			run:  func(t *testing.T) { harnesstest.TestEvaluator(t, scoreOutOfRange{}) },
			fail: []string{"cases", "cancelled-context", "deadline", "model-error", "concurrent", "empty-request", "nil-request"},
			pass: []string{"validate-config"},
		},
		"nil-result": {
			run:  func(t *testing.T) { harnesstest.TestEvaluator(t, nilResult{}) },
			fail: []string{"cases", "cancelled-context", "deadline", "model-error", "concurrent", "empty-request"},
			pass: []string{"nil-request"},
		},
		"passed-with-zero": {
			run:  func(t *testing.T) { harnesstest.TestEvaluator(t, passedWithZero{}) },
			fail: []string{"cases", "cancelled-context", "deadline", "model-error", "concurrent", "empty-request", "nil-request"},
		},
		"details-not-json": {
			run:  func(t *testing.T) { harnesstest.TestEvaluator(t, badDetails{}) },
			fail: []string{"cases", "cancelled-context", "deadline", "model-error", "concurrent", "empty-request"},
			pass: []string{"nil-request"},
		},
		"evaluator-panics-on-nil": {
			run:  func(t *testing.T) { harnesstest.TestEvaluator(t, panicsOnNil{}) },
			fail: []string{"nil-request"},
			pass: []string{"cases", "concurrent"},
		},
		"ignores-context": {
			run:  func(t *testing.T) { harnesstest.TestEvaluator(t, ignoresContext{}) },
			fail: []string{"cancelled-context", "deadline"},
			pass: []string{"nil-request"},
		},
		"mutates-request": {
			run:  func(t *testing.T) { harnesstest.TestEvaluator(t, mutatesRequest{}) },
			fail: []string{"request-unchanged"},
			pass: []string{"cases"},
			may:  []string{"concurrent"}, // a data race, under -race
		},
		"refuses-its-config": {
			run:  func(t *testing.T) { harnesstest.TestEvaluator(t, refusesEverything{}) },
			fail: []string{"validate-config"},
			pass: []string{"cases"},
		},
		"wrong-verdict": {
			run: func(t *testing.T) {
				req := &harness.EvalRequest{Test: harness.Test{Expected: harness.Expected{Answer: "4"}}, Response: "4"}
				harnesstest.TestEvaluator(t, exact{}, harnesstest.EvalCase{Name: "x", Request: req, Want: &harnesstest.Verdict{Score: 0.5}})
			},
			fail: []string{"cases"},
			pass: []string{"concurrent"},
		},
		"keeps-running": {
			run:  func(t *testing.T) { harnesstest.TestChannel(t, keepsRunning{}) },
			fail: []string{"stops-on-cancel", "cancelled-context", "concurrent"},
			pass: []string{"nil-run"},
		},
		"error-on-cancel": {
			run:  func(t *testing.T) { harnesstest.TestChannel(t, errOnCancel{}) },
			fail: []string{"stops-on-cancel", "cancelled-context", "concurrent"},
			pass: []string{"nil-run"},
		},
		"channel-panics-on-nil": {
			run:  func(t *testing.T) { harnesstest.TestChannel(t, channelPanicsOnNil{}) },
			fail: []string{"nil-run"},
			pass: []string{"stops-on-cancel"},
		},
		"deaf": {
			run: func(t *testing.T) {
				send := func(ctx context.Context, run *harness.ChannelRun) error {
					_, err := deaf{}.Receive(ctx, run, &harness.InboundRequest{Body: []byte(`{"user":"1","text":"hi"}`)})
					return err
				}
				harnesstest.TestChannel(t, deaf{}, harnesstest.ChannelCase{Name: "relay", Send: send, Wait: 500 * time.Millisecond})
			},
			fail: []string{"uses-host"},
			pass: []string{"stops-on-cancel", "receive"},
		},
		"bad-function-name": {
			run:  func(t *testing.T) { harnesstest.TestTool(t, badName{}) },
			fail: []string{"definition"},
			pass: []string{"cases"},
		},
		"required-without-property": {
			run:  func(t *testing.T) { harnesstest.TestTool(t, badRequired{}) },
			fail: []string{"definition"},
		},
		"output-not-json": {
			run:  func(t *testing.T) { harnesstest.TestTool(t, textOutput{}) },
			fail: []string{"cases", "repeated-call", "bad-arguments", "cancelled-context", "concurrent"},
			pass: []string{"definition", "nil-request"},
		},
		"tool-panics-on-nil": {
			run:  func(t *testing.T) { harnesstest.TestTool(t, toolPanicsOnNil{}) },
			fail: []string{"nil-request", "bad-arguments"}, // it echoes arguments that are not JSON
			pass: []string{"definition"},
		},
		"slow-tool": {
			run:  func(t *testing.T) { harnesstest.TestTool(t, slow{}) },
			fail: []string{"cancelled-context"},
		},
		"accepts-anything": {
			run: func(t *testing.T) {
				harnesstest.TestTool(t, acceptsAnything{}, harnesstest.ToolCase{Name: "missing b", Arguments: `{"a":1}`, WantErr: true})
			},
			fail: []string{"cases", "repeated-call", "concurrent"},
		},
		"refuses-repeats": {
			run: func(t *testing.T) {
				harnesstest.TestTool(t, refusesRepeats{done: &sync.Map{}}, harnesstest.ToolCase{Name: "sum", Arguments: `{"a":1,"b":2}`})
			},
			fail: []string{"repeated-call"},
			pass: []string{"definition", "cases", "bad-arguments", "concurrent"},
		},
	}
	if raceEnabled {
		bc["racy"] = broken{
			run:  func(t *testing.T) { harnesstest.TestEvaluator(t, racy{n: &n}) },
			fail: []string{"concurrent"},
		}
	}
	return bc
}

// TestBroken runs the kits against the broken implementations; it runs
// only as the child process of TestKitsCatchBrokenImplementations.
func TestBroken(t *testing.T) {
	if os.Getenv("HARNESSTEST_BROKEN") == "" {
		t.Skip("run by TestKitsCatchBrokenImplementations")
	}
	cases := brokenCases()
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, cases[name].run)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
