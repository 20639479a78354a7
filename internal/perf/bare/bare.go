// Package bare is the yardstick of Gauntlet's speed: the least work an
// evaluator must do per test. It sends "What is A + B?" chat completions
// to an OpenAI-compatible endpoint with a fixed number in flight (one
// kept-alive connection each), decodes each answer, checks the number
// after "answer is" with a regular expression, and stores nothing. The
// end-to-end benchmark (cmd/gauntlet BenchmarkEndToEnd) runs it beside
// gauntlet run on the same tests and the same fake endpoint, and reports
// the ratio of the two.
package bare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Sum is one test: the question "What is A + B?", whose answer is A+B.
type Sum struct{ A, B int }

// Result is what a run of the bare client measured.
type Result struct {
	Wall     time.Duration // from the first request sent to the last answer checked
	Failures int64         // requests that failed, or answers that were wrong
}

var answerRE = regexp.MustCompile(`answer is\s*(-?\d+)`)

// Run asks every sum of tests of the endpoint at baseURL (".../v1") with
// model, concurrency requests in flight.
func Run(ctx context.Context, baseURL, model string, tests []Sum, concurrency int) (Result, error) {
	if concurrency < 1 {
		return Result{}, fmt.Errorf("concurrency %d: want 1 or more", concurrency)
	}
	transport := &http.Transport{MaxIdleConnsPerHost: concurrency, MaxConnsPerHost: concurrency}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	var failures atomic.Int64
	jobs := make(chan Sum)
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for s := range jobs {
				if !ask(ctx, client, baseURL, model, s) {
					failures.Add(1)
				}
			}
		})
	}
	for _, s := range tests {
		jobs <- s
	}
	close(jobs)
	wg.Wait()
	return Result{Wall: time.Since(start), Failures: failures.Load()}, ctx.Err()
}

// ask sends one test and reports whether its answer was right.
func ask(ctx context.Context, client *http.Client, baseURL, model string, s Sum) bool {
	body, err := json.Marshal(map[string]any{
		"model": model,
		"messages": []map[string]string{
			{"role": "system", "content": "Answer with: The answer is N."},
			{"role": "user", "content": fmt.Sprintf("What is %d + %d?", s.A, s.B)},
		},
	})
	if err != nil {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil || len(out.Choices) == 0 {
		return false
	}
	m := answerRE.FindStringSubmatch(out.Choices[0].Message.Content)
	return m != nil && m[1] == strconv.Itoa(s.A+s.B)
}
