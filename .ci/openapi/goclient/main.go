// Command goclient drives a live Gauntlet server through the Go client
// oapi-codegen generates from the server's OpenAPI document: it creates a
// domain, a test and a tool, clears nullable fields with null, runs an
// evaluation and reads the run back, checking each answer's typed body.
//
// It is not part of the Gauntlet module: .ci/openapi-check copies it into
// a scratch module beside the freshly generated package client, and runs
// it with -base (the server's URL) and, for a server with a token, -token.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/oapi-codegen/nullable"

	"gauntletcheck/client"
)

func main() {
	base := flag.String("base", "", "the server's URL")
	token := flag.String("token", "", "the server's API token, if it has one")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *base, *token); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
	fmt.Println("goclient: the generated Go client created, cleared, ran and read back through", *base)
}

func ptr[T any](v T) *T { return &v }

// expect returns an error unless the answer has the status.
func expect(what string, got int, want int, body []byte) error {
	if got != want {
		return fmt.Errorf("%s: status %d, want %d: %s", what, got, want, body)
	}
	return nil
}

func run(ctx context.Context, base, token string) error {
	c, err := client.NewClientWithResponses(base, client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}))
	if err != nil {
		return err
	}

	// A domain: required fields plain, optional ones pointers.
	d, err := c.CreateDomainWithResponse(ctx, client.DomainCreate{Id: "ci_domain", Name: "CI", EvaluatorId: ptr("number")})
	if err != nil {
		return err
	}
	if err := expect("create-domain", d.StatusCode(), http.StatusCreated, d.Body); err != nil {
		return err
	}
	if d.JSON201.Id != "ci_domain" || !d.JSON201.Enabled || d.JSON201.EvaluatorId != "number" {
		return fmt.Errorf("create-domain: %+v", *d.JSON201)
	}
	dup, err := c.CreateDomainWithResponse(ctx, client.DomainCreate{Id: "ci_domain", Name: "Again"})
	if err != nil {
		return err
	}
	if p := dup.ApplicationproblemJSON409; p == nil || p.Status != http.StatusConflict || bool(p.Success) {
		return fmt.Errorf("create-domain again: want a 409 problem, got %d %s", dup.StatusCode(), dup.Body)
	}

	// A test with a tolerance, then the tolerance cleared with null.
	tc, err := c.CreateTestWithResponse(ctx, client.TestCreate{
		Id: ptr("ci_sum"), DomainId: "ci_domain", Level: 1, Prompt: "What is 2 + 3?",
		Expected: &client.ExpectedInput{Answer: ptr("5"), Type: ptr("numeric"), Tolerance: nullable.NewNullableWithValue(0.25)},
	})
	if err != nil {
		return err
	}
	if err := expect("create-test", tc.StatusCode(), http.StatusCreated, tc.Body); err != nil {
		return err
	}
	if tol := tc.JSON201.Expected.Tolerance; tol == nil || *tol != 0.25 {
		return fmt.Errorf("create-test: tolerance %v, want 0.25", tol)
	}
	noTolerance := client.ExpectedInput{}
	noTolerance.Tolerance.SetNull()
	// Conditional: the tag the creation answered, which the update makes
	// stale.
	read := &client.UpdateTestParams{IfMatch: &[]string{tc.HTTPResponse.Header.Get("ETag")}}
	up, err := c.UpdateTestWithResponse(ctx, "ci_sum", read, client.TestUpdate{Name: ptr("Small sum"), Expected: &noTolerance})
	if err != nil {
		return err
	}
	if err := expect("update-test", up.StatusCode(), http.StatusOK, up.Body); err != nil {
		return err
	}
	if got := up.JSON200; got.Expected.Tolerance != nil || got.Expected.Answer != "5" || got.Name != "Small sum" {
		return fmt.Errorf("update-test with tolerance null: %+v", got.Expected)
	}
	stale, err := c.UpdateTestWithResponse(ctx, "ci_sum", read, client.TestUpdate{Name: ptr("Lost update")})
	if err != nil {
		return err
	}
	if err := expect("update-test with a stale If-Match", stale.StatusCode(), http.StatusPreconditionFailed, stale.Body); err != nil {
		return err
	}
	if stale.ApplicationproblemJSON412 == nil || stale.HTTPResponse.Header.Get("ETag") != up.HTTPResponse.Header.Get("ETag") {
		return fmt.Errorf("update-test with a stale If-Match: %s", stale.Body)
	}

	// A tool with a mock response, then the mock response cleared.
	tool, err := c.CreateToolWithResponse(ctx, client.ToolCreate{
		Id: "ci_tool", Function: client.ToolFunctionInput{Name: "ci_tool"}, MockResponse: map[string]any{"ok": true},
	})
	if err != nil {
		return err
	}
	if err := expect("create-tool", tool.StatusCode(), http.StatusCreated, tool.Body); err != nil {
		return err
	}
	noMock := client.ToolUpdate{}
	noMock.MockResponse.SetNull()
	tu, err := c.UpdateToolWithResponse(ctx, "ci_tool", nil, noMock)
	if err != nil {
		return err
	}
	if err := expect("update-tool", tu.StatusCode(), http.StatusOK, tu.Body); err != nil {
		return err
	}
	if tu.JSON200.MockResponse != nil {
		return fmt.Errorf("update-tool with mock_response null: %v", tu.JSON200.MockResponse)
	}

	// A run of the domain, waited for, read back.
	var domains nullable.Nullable[[]string]
	domains.Set([]string{"ci_domain"})
	st, err := c.StartRunWithResponse(ctx, client.RunStart{ModelName: ptr("goclient"), Domains: domains})
	if err != nil {
		return err
	}
	if err := expect("start-run", st.StatusCode(), http.StatusOK, st.Body); err != nil {
		return err
	}
	runID := st.JSON200.RunId
	for {
		s, err := c.GetStatusWithResponse(ctx)
		if err != nil {
			return err
		}
		if err := expect("get-status", s.StatusCode(), http.StatusOK, s.Body); err != nil {
			return err
		}
		if s.JSON200.Status == client.EngineStatusStatusIdle {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the run did not end: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	r, err := c.GetRunWithResponse(ctx, runID, nil)
	if err != nil {
		return err
	}
	if err := expect("get-run", r.StatusCode(), http.StatusOK, r.Body); err != nil {
		return err
	}
	info := r.JSON200.RunInfo
	cfg, err := info.Config.Get()
	if err != nil {
		return fmt.Errorf("get-run: config: %v", err)
	}
	if info.Status != client.RunStatusCompleted || !info.Complete || info.TotalTests != 1 || len(r.JSON200.TestResults) != 1 || cfg.Concurrency < 1 {
		return fmt.Errorf("get-run: %s", r.Body)
	}
	if res := r.JSON200.TestResults[0]; res.TestId != "ci_sum" || res.Status != client.TestResultStatusPassed || res.Expected.Tolerance != nil {
		return fmt.Errorf("get-run: result %+v", res)
	}
	missing, err := c.GetRunWithResponse(ctx, "no-such-run", nil)
	if err != nil {
		return err
	}
	if missing.ApplicationproblemJSON404 == nil {
		return fmt.Errorf("get-run of an unknown run: want a 404 problem, got %d %s", missing.StatusCode(), missing.Body)
	}
	return nil
}
