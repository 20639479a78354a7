// Command gauntlet evaluates language models and runs conversational
// agents. Subcommands:
//
//	gauntlet init     write a small commented suite to start from, which
//	                  runs as it is against gauntlet mockllm
//	gauntlet serve    the HTTP API and the dashboard
//	gauntlet run      one evaluation without the server, for CI: writes
//	                  text, JSON or JUnit XML and exits 1 when the run is
//	                  below --min-score, not complete or has tests in error;
//	                  with --model given several times, one run per model
//	                  and one table comparing them with the first
//	gauntlet mockllm  a deterministic OpenAI-compatible endpoint for demos
//	                  and tests
//	gauntlet plugins  list the plugins found, with versions and health
//	gauntlet validate check every definition file: exits 1 listing the
//	                  errors as file:line: message
//	gauntlet compare  compare two runs test by test (or several, each
//	                  with the first); with --fail-on-regression exits 1
//	                  when a domain and level got significantly worse
//	gauntlet worker   with PostgreSQL, execute the tests of the runs a
//	                  server sharing the database started
//	gauntlet version  print the version
//
// Every setting of serve and run can also be set through its environment
// variable; a flag given on the command line wins. Run "gauntlet <command>
// -h" for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
	"github.com/gauntlet-eval/gauntlet/server"
)

func main() {
	// First: a copy of this binary started to extract one knowledge-base
	// document does that and exits here.
	kbdoc.RunIfChild()
	stopProfile := startProfile(os.Getenv("GAUNTLET_CPUPROFILE"))
	code := mainCode()
	stopProfile()
	os.Exit(code)
}

// mainCode runs the command of the process's arguments and returns its
// exit status.
func mainCode() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errGateFailed):
		fmt.Fprintln(os.Stderr, "gauntlet:", err)
		return 1
	case errors.Is(err, errInvalidDefinitions):
		return 1
	case !errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "gauntlet:", err)
	}
	return 2
}

// startProfile writes a CPU profile of the whole process to path when it
// is not empty (GAUNTLET_CPUPROFILE: where a run's time goes, for a bug
// report or docs/performance.md) and returns the function that ends it.
func startProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gauntlet: GAUNTLET_CPUPROFILE:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "gauntlet: GAUNTLET_CPUPROFILE:", err)
		}
	}
}

var errUsage = errors.New("usage")

// errHelp ends a command that printed its help on -h: not an error.
var errHelp = errors.New("help")

// parseFlags parses a command's flags and refuses positional arguments,
// which most commands do not take: "gauntlet run arithmetic" must not
// silently run every domain. hint, when not empty, says what to use
// instead. It returns errHelp after -h (the caller returns nil) and
// errUsage on a bad flag or an argument.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, hint string) error {
	_, err := parseArgs(fs, args, 0, stderr, hint)
	return err
}

// parseArgs parses a command's flags, which may come before, between or
// after its positional arguments (the flag package alone stops at the
// first argument), and returns those arguments in order. More than most
// of them (most < 0: no limit) is a usage error naming the first extra,
// with hint. It returns errHelp after -h and errUsage on a bad flag.
func parseArgs(fs *flag.FlagSet, args []string, most int, stderr io.Writer, hint string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, errUsage
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		if most >= 0 && len(pos) == most {
			msg := fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
			if hint != "" {
				msg += "; " + hint
			}
			fmt.Fprintln(stderr, msg)
			return nil, errUsage
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return errUsage
	}
	switch args[0] {
	case "init":
		return initCmd(ctx, args[1:], stdout, stderr)
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "mockllm":
		return mockllm(ctx, args[1:], stdout, stderr)
	case "run":
		return runCmd(ctx, args[1:], stdout, stderr)
	case "plugins":
		return pluginsCmd(ctx, args[1:], stdout, stderr)
	case "validate":
		return validateCmd(ctx, args[1:], stdout, stderr)
	case "import-tests":
		return importTestsCmd(ctx, args[1:], stdout, stderr)
	case "compare":
		return compareCmd(ctx, args[1:], stdout, stderr)
	case "rescore":
		return rescoreCmd(ctx, args[1:], stdout, stderr)
	case "migrate":
		return migrateCmd(ctx, args[1:], stdout, stderr)
	case "worker":
		return workerCmd(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "gauntlet", server.Version)
		return nil
	case "help", "-h", "--help":
		usage(stdout)
		return nil
	default:
		fmt.Fprintf(stderr, "gauntlet: unknown command %q\n\n", args[0])
		usage(stderr)
		return errUsage
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: gauntlet <command> [flags]

Commands:
  init      write a small evaluation suite to start from: gauntlet init [DIR]
  serve     run the HTTP API server and the dashboard
  mockllm   serve a deterministic OpenAI-compatible endpoint for demos and tests
  run       run one evaluation without the server (for CI), or one per --model, compared
  plugins   list the plugins found, with versions and health
  validate  check every definition file (unknown keys, YAML errors, bad values)
  compare   compare runs test by test: compare BASE HEAD [HEAD...] [--fail-on-regression]
  rescore   score a stored run's responses again with today's evaluators: rescore RUN_ID
  migrate   bring the database's schemas to this version, and say what changed
  worker    with PostgreSQL: execute the tests of the runs a server started
  import-tests  create tests from a JSONL or CSV dataset: import-tests FILE --domain D --level N
  version   print the version

Run "gauntlet <command> -h" for a command's flags.
`)
}
