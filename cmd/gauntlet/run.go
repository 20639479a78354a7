package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

type runFlags struct {
	settings
	domains   string
	modelName string
	model     string
	minScore  float64
	format    string
	output    string
	resume    string
	agent     string
	target    string
}

// runCmd is "gauntlet run": one evaluation without the HTTP server, with
// the same engine and store as serve.
func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f runFlags
	fs := flag.NewFlagSet("gauntlet run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := f.settings.register(fs, appSettings); err != nil {
		return err
	}
	fs.StringVar(&f.domains, "domains", "", "comma-separated domain ids (default: every enabled domain)")
	fs.StringVar(&f.modelName, "model-name", "default", "label of the run")
	var sweep sweepFlags
	sweep.register(fs)
	fs.StringVar(&f.target, "target", "", "evaluate this black-box target (targets/<id>.yaml of the definitions) instead of a model: every user turn goes to its URL with the conversation so far; the label defaults to its id")
	fs.StringVar(&f.agent, "agent", "", "evaluate this agent (of the data directory's database) instead of the bare model: each test goes through its system prompt, knowledge base and tools, with its model; the label defaults to its name")
	fs.Float64Var(&f.minScore, "min-score", 0, "exit with status 1 when the overall score is below this (0-1); a run that is not complete or has tests in error exits 1 too")
	fs.StringVar(&f.format, "format", "text", "report format: text, json or junit")
	fs.StringVar(&f.output, "output", "", "write the report to this file instead of stdout")
	fs.StringVar(&f.resume, "resume", "", "resume this stored run instead of starting one: run its tests that have no result or ended in error, with the definitions it stored (--definitions is read only when given)")
	timeoutS := fs.Float64("timeout-s", 0, "bound of each model request of this run, in seconds (default --llm-timeout)")
	retries := -1 // a negative number: --llm-retries
	fs.Func("retries", "`n` retries of a failed model request in this run (default --llm-retries)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("not an integer")
		}
		retries = n
		return nil
	})
	cache := fs.Bool("cache", false, "answer each model request identical to one made before (same endpoint, model, messages, tools, sampling parameters and repeat) from the response cache in the database, and store new answers there; a judge is never cached")
	stream := fs.Bool("stream", false, "ask for every answer as a stream, so that each model call records the time to its first token")
	repeats := fs.Int("repeats", 1, "ask each test `n` times, 1 to 100; each asking is a result of its own and counts as a sample")
	maxCost := fs.Float64("max-cost", 0, "budget of the run in `USD`: once what its results cost (judges' calls included, at the prices of pricing.yaml) reaches it, no new request is sent and the run ends stopped; with --resume, the resumed run's budget, its earlier cost included; 0: none")
	var params harness.Params
	fs.Func("temperature", "sampling `temperature` of this run's model requests, 0 to 2 (default: the level's, else the endpoint's)", func(v string) error {
		return parseParam(v, &params.Temperature, strconv.ParseFloat)
	})
	fs.Func("top-p", "nucleus sampling mass `p` of this run, greater than 0 and at most 1 (default: the level's, else the endpoint's)", func(v string) error {
		return parseParam(v, &params.TopP, strconv.ParseFloat)
	})
	fs.Func("max-tokens", "bound `n` on the tokens of each answer in this run (default: the level's, else the endpoint's)", func(v string) error {
		return parseParam(v, &params.MaxTokens, func(s string, _ int) (int, error) { return strconv.Atoi(s) })
	})
	fs.Func("seed", "sampling `seed` of this run, where the endpoint supports one (default: the level's, else none)", func(v string) error {
		return parseParam(v, &params.Seed, func(s string, _ int) (int64, error) { return strconv.ParseInt(s, 10, 64) })
	})
	fs.Func("reasoning", "ask the model to think first: an `effort` (low, medium, high) or a budget of tokens (a number) (default: the level's, else none)", func(v string) error {
		r, err := parseReasoning(v)
		params.Reasoning = r
		return err
	})
	if err := parseFlags(fs, args, stderr, "choose domains with --domains a,b"); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if err := sweep.check(&f, stderr); err != nil {
		return err
	}
	var req engine.StartRequest
	if *timeoutS != 0 {
		req.Timeout = time.Duration(*timeoutS * float64(time.Second))
	}
	if retries >= 0 {
		req.Retries = &retries
	}
	req.Params = params
	req.Repeats = *repeats
	if *maxCost < 0 || math.IsNaN(*maxCost) {
		return fmt.Errorf("--max-cost must be 0 (no budget) or more, not %v", *maxCost)
	}
	req.MaxCostUSD = *maxCost
	req.Cache, req.Stream = *cache, *stream
	if f.resume != "" && (f.domains != "" || f.model != "" || !params.IsZero() || *repeats != 1 || *cache || *stream) {
		return fmt.Errorf("--resume runs the stored run as it was: it takes no --domains, --model, --repeats, --cache, --stream or sampling parameters")
	}
	if f.agent != "" && (f.model != "" || sweep.sweeping() || f.resume != "") {
		return fmt.Errorf("--agent takes no --model (the agent decides its model) and no --resume (a resumed run keeps its target)")
	}
	if f.agent != "" && !flagSet(fs, "model-name") {
		f.modelName = "" // the agent's name
	}
	if *repeats < 1 || *repeats > engine.MaxRepeats {
		return fmt.Errorf("--repeats must be between 1 and %d, not %d", engine.MaxRepeats, *repeats)
	}
	if err := params.Validate(); err != nil {
		return fmt.Errorf("sampling parameters: %w", err)
	}
	switch f.format {
	case "text", "json", "junit":
	default:
		return fmt.Errorf("--format must be text, json or junit, not %q", f.format)
	}
	if f.minScore < 0 || f.minScore > 1 {
		return fmt.Errorf("--min-score must be between 0 and 1, not %v", f.minScore)
	}
	var domains []string
	if f.domains != "" {
		for _, d := range strings.Split(f.domains, ",") {
			if d = strings.TrimSpace(d); d != "" {
				domains = append(domains, d)
			}
		}
	}

	progress := newProgress(stderr)
	finished := make(chan runs.Info, 1)
	a, err := openApp(ctx, f.settings, appOptions{
		log:                  slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		definitionsMustExist: true,
		kind:                 runs.KindRun,
		// A resume runs the definitions the run stored: a definitions
		// directory is read only when one is named (for the tools of an
		// agent the run evaluated).
		noDefinitions: f.resume != "" && !flagSet(fs, "definitions") && os.Getenv("GAUNTLET_DEFINITIONS") == "",
		evalAgents:    true, // for --agent, and to resume a run that evaluated one
		onEvent: func(ev engine.Event) {
			progress.event(ev)
			if ev.Kind == engine.EventRunFinished {
				finished <- *ev.Info
			}
		},
	})
	if err != nil {
		return err
	}
	defer a.Close()
	if a.model != nil {
		progress.watch(a.model)
	}
	if err := checkLoadErrors(ctx, a.catalog, a.loaded, f.definitions, domains, f.resume != "", stderr); err != nil {
		return err
	}
	if sweep.sweeping() {
		req.Domains = domains
		out, closeOut, err := outputFile(f.output, stdout)
		if err != nil {
			return err
		}
		err = runSweep(ctx, a, fs, f, sweep, req, progress, finished, out, stderr)
		if cerr := closeOut(); cerr != nil && (err == nil || errors.Is(err, errGateFailed)) {
			return cerr // the report did not reach its file: that outweighs the verdict
		}
		return err
	}
	if f.resume != "" {
		err = a.engine.ResumeWith(context.WithoutCancel(ctx), f.resume, engine.ResumeOptions{MaxCostUSD: *maxCost})
	} else {
		req.ModelName, req.Model, req.Domains, req.AgentID, req.TargetID = f.modelName, f.model, domains, f.agent, f.target
		_, err = a.engine.Start(context.WithoutCancel(ctx), req)
	}
	if err != nil {
		return err
	}
	info := awaitRun(ctx, a, finished, stderr, "stopping the run")
	progress.finish()

	return writeReport(a.runs, info, f.format, f.output, f.minScore, stdout, stderr)
}

// awaitRun waits for the run the engine is running to end and returns its
// final info. When ctx ends first (an interrupt), it says so on stderr
// ("interrupted: <stopping> (finished results are kept)"), stops the run
// and waits for its end.
func awaitRun(ctx context.Context, a *app, finished <-chan runs.Info, stderr io.Writer, stopping string) runs.Info {
	select {
	case info := <-finished:
		return info
	case <-ctx.Done():
		fmt.Fprintf(stderr, "\ninterrupted: %s (finished results are kept)\n", stopping)
		a.engine.Stop(10 * time.Second)
		return <-finished
	}
}

// flagSet reports whether the command line set a flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// progress shows a run's progress: a bar redrawn in place on a terminal,
// a line per finished level otherwise.
type progress struct {
	w        io.Writer
	terminal bool
	total    int
	done     int
	failed   int
	// limits is the model client's rate-limit state, nil when it reports
	// none; throttled is what the progress last said of each provider.
	limits    harness.RateLimitReporter
	throttled map[string]bool
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progress) event(ev engine.Event) {
	switch ev.Kind {
	case engine.EventRunStarted:
		p.total = ev.Info.TotalTests
		fmt.Fprintf(p.w, "run %s: %d tests\n", ev.RunID, p.total)
	case engine.EventTestFinished:
		p.done++
		if ev.Result.Status != runs.TestPassed {
			p.failed++
		}
		throttling := p.throttling()
		if p.terminal {
			const width = 30
			filled := width * p.done / max(p.total, 1)
			fmt.Fprintf(p.w, "\r[%s%s] %d/%d tests, %d not passed%s\x1b[K", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.done, p.total, p.failed, throttling)
		}
	case engine.EventCellFinished:
		if !p.terminal {
			fmt.Fprintf(p.w, "%s L%d: %s, score %.2f (%d/%d passed) [%d/%d tests]\n",
				ev.Domain, ev.Level, ev.Cell.Status, deref(ev.Cell.Score), ev.Cell.Passed, ev.Cell.Tests, p.done, p.total)
		}
	}
}

func (p *progress) finish() {
	if p.terminal {
		fmt.Fprintln(p.w)
	}
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

// parseParam parses a sampling parameter flag into *dst.
func parseParam[T any](v string, dst **T, parse func(string, int) (T, error)) error {
	n, err := parse(strings.TrimSpace(v), 64)
	if err != nil {
		return errors.New("not a number")
	}
	*dst = &n
	return nil
}

// parseReasoning reads --reasoning: an effort word or a budget of tokens.
func parseReasoning(v string) (*harness.ReasoningParams, error) {
	r := &harness.ReasoningParams{}
	if n, err := strconv.Atoi(v); err == nil {
		r.BudgetTokens = n
	} else {
		r.Effort = v
	}
	if err := (harness.Params{Reasoning: r}).Validate(); err != nil {
		return nil, errors.New("must be low, medium, high or a number of tokens from 1 to " + strconv.Itoa(harness.MaxParamTokens))
	}
	return r, nil
}
