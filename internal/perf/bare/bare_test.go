package bare_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/internal/perf/bare"
)

// TestRunChecksEveryAnswer runs the bare client against the fake endpoint,
// which answers sums right, then against one that answers the sums with
// a 7 in them wrong and one that is down: only the wrong answers and the
// failed requests count as failures.
func TestRunChecksEveryAnswer(t *testing.T) {
	t.Parallel()
	var tests []bare.Sum
	wrong := 0
	for i := range 200 {
		s := bare.Sum{A: i * 13, B: i % 17}
		if strings.Contains(strconv.Itoa(s.A)+" "+strconv.Itoa(s.B), "7") {
			wrong++
		}
		tests = append(tests, s)
	}
	right := llmtest.NewServer(llmtest.Options{})
	defer right.Close()
	res, err := bare.Run(context.Background(), right.URL, llmtest.DefaultModel, tests, 8)
	if err != nil || res.Failures != 0 || res.Wall <= 0 {
		t.Fatalf("against a right endpoint: %+v, %v", res, err)
	}
	if got := right.Stats().Requests; got != int64(len(tests)) {
		t.Errorf("the endpoint saw %d requests, want %d", got, len(tests))
	}

	liar := llmtest.NewServer(llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		if strings.Contains(req.LastUser(), "7") {
			return &llmtest.Reply{Content: "The answer is -1."}
		}
		return nil
	}})
	defer liar.Close()
	if res, err := bare.Run(context.Background(), liar.URL, llmtest.DefaultModel, tests, 8); err != nil || res.Failures != int64(wrong) {
		t.Errorf("against a lying endpoint: %+v, %v; want %d failures", res, err, wrong)
	}

	url := liar.URL
	liar.Close()
	if res, _ := bare.Run(context.Background(), url, llmtest.DefaultModel, tests[:5], 2); res.Failures != 5 {
		t.Errorf("against a closed endpoint: %+v, want 5 failures", res)
	}
	if _, err := bare.Run(context.Background(), right.URL, llmtest.DefaultModel, tests, 0); err == nil {
		t.Errorf("a concurrency of 0 was taken")
	}
}
