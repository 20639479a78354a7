package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// initSuite is the suite "gauntlet init" writes: initsuite/definitions
// becomes DIR/definitions.
//
//go:embed initsuite
var initSuite embed.FS

// initCmd is "gauntlet init [DIR]": it writes a small commented suite into
// DIR/definitions (DIR defaults to the current directory) that runs as it
// is against "gauntlet mockllm", and prints the next commands. It writes
// nothing when one of its files exists already, unless --force.
func initCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gauntlet init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: gauntlet init [--force] [DIR]

Writes a small, commented evaluation suite into DIR/definitions (DIR
defaults to the current directory): an evaluator, a tool, and a domain
with two levels of tests, one of them a tool call. It runs as it is
against "gauntlet mockllm"; the commands to try it are printed at the end.
Existing files are left alone: init refuses to write over them unless
--force is given.

Flags:
`)
		fs.PrintDefaults()
	}
	force := fs.Bool("force", false, "overwrite the suite's files that exist already")
	dir, err := parseDirArg(fs, args, stderr)
	if err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}

	files, err := suiteFiles()
	if err != nil {
		return err
	}
	if !*force {
		var existing []string
		for _, rel := range files {
			if name := filepath.Join(dir, filepath.FromSlash(rel)); exists(name) {
				existing = append(existing, name)
			}
		}
		if n := len(existing); n > 0 {
			list := strings.Join(existing[:min(n, 3)], ", ")
			if n > 3 {
				list += fmt.Sprintf(" and %d more", n-3)
			}
			return fmt.Errorf("init: %s already %s: nothing was written. Choose another directory, or pass --force to overwrite %s",
				list, plural(n, "exists", "exist"), plural(n, "it", "them"))
		}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	for _, rel := range files {
		data, err := initSuite.ReadFile(path.Join("initsuite", rel))
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		if err := writeNew(target, data, flags); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", target)
	}

	defs := shellQuote(filepath.Join(dir, "definitions"))
	fmt.Fprintf(stdout, `
Try it against the bundled mock model (6 of 6 tests pass):

  gauntlet mockllm --addr 127.0.0.1:8081 &
  gauntlet validate --definitions %[1]s
  gauntlet run --definitions %[1]s --llm-base-url http://127.0.0.1:8081/v1 --llm-model llmtest-model

then against your model (Ollama's address shown):

  gauntlet run --definitions %[1]s --llm-base-url http://127.0.0.1:11434/v1 --llm-model llama3.2

%[2]s says more.
`, defs, filepath.Join(dir, "definitions", "README.md"))
	return nil
}

// parseDirArg parses a command's flags, which may come before or after
// its one optional positional argument, and returns that argument ("."
// when absent). It refuses a second argument.
func parseDirArg(fs *flag.FlagSet, args []string, stderr io.Writer) (string, error) {
	dirs, err := parseArgs(fs, args, 1, stderr, "give one directory")
	switch {
	case err != nil:
		return "", err
	case len(dirs) == 0:
		return ".", nil
	}
	return dirs[0], nil
}

// suiteFiles lists the embedded suite's files, as slash paths relative to
// initsuite.
func suiteFiles() ([]string, error) {
	var files []string
	err := fs.WalkDir(initSuite, "initsuite", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, strings.TrimPrefix(p, "initsuite/"))
		return nil
	})
	return files, err
}

// exists reports whether something, even a broken link, is at name.
func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

// writeNew writes data to name, opened with flags.
func writeNew(name string, data []byte, flags int) error {
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and ./_-+:@%, so that a printed command can be pasted.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789./_-+:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
