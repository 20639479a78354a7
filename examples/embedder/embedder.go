// Package embedder shows Gauntlet used as a library by a program of its
// own, with no server, no definitions directory and no database file: an
// evaluation suite is compiled into the binary (suite/, with go:embed),
// loaded with catalog.Load, run with engine.Run against any
// harness.ChatModel (the OpenAI-compatible client of harness/llm, or a
// model the program brings), and its results kept in a database that
// lives in memory for the length of the run.
//
// Evaluate is the whole of it; Report.Print writes the matrix. The
// examples run it against the fake endpoint of harness/llm/llmtest over
// real HTTP, and against an in-process model.
package embedder

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

//go:embed suite
var suiteFiles embed.FS

// Suite returns the embedded definitions, rooted at the folder that holds
// evaluators/ and domains/, as catalog.Load expects.
func Suite() fs.FS {
	sub, err := fs.Sub(suiteFiles, "suite")
	if err != nil {
		panic(err) // "suite" is a valid path: this cannot happen
	}
	return sub
}

// Options configure Evaluate. The zero value is ready to use.
type Options struct {
	// Model is the model name sent to the endpoint; empty leaves it to
	// the client.
	Model string
	// OnEvent, when set, receives the run's events as they happen (each
	// with the run's progress, Done of Total), for a progress bar.
	OnEvent func(engine.Event)
}

// Report is what an evaluation found: the run's final info and its
// domain × level matrix.
type Report struct {
	Info   runs.Info
	Matrix runs.Matrix
}

// Evaluate runs the embedded suite against model and returns the report.
// Cancelling ctx stops the run: the report then holds what finished
// (status stopped) and the error is ctx's. A suite file that does not
// load is an error: an embedded suite is fixed at build time, so it must
// be whole.
func Evaluate(ctx context.Context, model harness.ChatModel, opts Options) (Report, error) {
	defs, res, err := catalog.Load(ctx, Suite(), catalog.LoadOptions{})
	if err != nil {
		return Report{}, err
	}
	if len(res.Errors) > 0 {
		msgs := make([]string, len(res.Errors))
		for i, fe := range res.Errors {
			msgs[i] = fe.String()
		}
		return Report{}, fmt.Errorf("the embedded suite does not load: %s", strings.Join(msgs, "; "))
	}
	db, err := store.OpenMemory(ctx)
	if err != nil {
		return Report{}, err
	}
	defer db.Close()
	history, err := runs.Open(ctx, db)
	if err != nil {
		return Report{}, err
	}
	eng, err := engine.New(ctx, engine.Options{Definitions: defs, Runs: history, Client: model, Model: opts.Model})
	if err != nil {
		return Report{}, err
	}
	info, runErr := eng.Run(ctx, engine.StartRequest{ModelName: "embedder", OnEvent: opts.OnEvent})
	if info.RunID == "" {
		return Report{}, runErr
	}
	// The run is over: its matrix is read even when ctx is done.
	m, err := history.Matrix(context.WithoutCancel(ctx), info.RunID)
	if err != nil {
		return Report{}, errors.Join(runErr, err)
	}
	return Report{Info: info, Matrix: m}, runErr
}

// Print writes the matrix, a line per domain and level in order, and the
// run's summary.
func (r Report) Print(w io.Writer) {
	for _, domain := range slices.Sorted(maps.Keys(r.Matrix)) {
		levels := r.Matrix[domain]
		// Level keys are numbers as strings: "10" comes after "9".
		keys := slices.SortedFunc(maps.Keys(levels), func(a, b string) int {
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return x - y
		})
		for _, level := range keys {
			c := levels[level]
			fmt.Fprintf(w, "%-10s L%s  %-7s %s  %d/%d passed\n", domain, level, c.Status, score(c.Score), c.Passed, c.Tests)
		}
	}
	in := r.Info
	fmt.Fprintf(w, "%s: %s over %d of %d tests (%d passed, %d failed, %d errors), complete: %v\n",
		in.Status, score(in.OverallScore), in.DoneTests, in.TotalTests, in.Passed, in.Failed, in.Errors, in.Complete)
}

func score(s *float64) string {
	if s == nil {
		return "score -"
	}
	return fmt.Sprintf("score %.2f", *s)
}
