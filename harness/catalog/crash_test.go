package catalog

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// The crash tests run this test binary again as a helper process that
// writes to a definitions directory, and kill it with SIGKILL at chosen or
// random moments. These variables tell the helper what to do.
const (
	crashEnvDir   = "GAUNTLET_CRASH_DIR"   // the definitions directory
	crashEnvMode  = "GAUNTLET_CRASH_MODE"  // "pause:<step>:<n>" or "loop"
	crashEnvStart = "GAUNTLET_CRASH_START" // "a" or "b": the tree to import first
)

// crashTree returns one of two sets of definitions that differ in every
// kind and in most files: "a" or "b".
func crashTree(name string) *harness.Snapshot {
	s := &harness.Snapshot{
		Evaluators: []harness.EvaluatorConfig{{ID: "ev-" + name, Name: "Evaluator " + name, ExtractionRegex: `(\d+)`}},
		Tools: []harness.ToolDefinition{{ID: "tool-" + name, Name: "Tool " + name,
			Function: harness.FunctionDef{Name: "tool_" + name}}},
	}
	for d := range 6 {
		// Domains d0..d2 are in both trees, with other content.
		id := fmt.Sprintf("d%d", d)
		if d >= 3 {
			id = fmt.Sprintf("%s%d", name, d)
		}
		s.Domains = append(s.Domains, harness.Domain{ID: id, Name: "Domain " + id + " of " + name,
			EvaluatorID: "ev-" + name, Enabled: true})
		for l := 1; l <= 3; l++ {
			for i := range 4 {
				s.Tests = append(s.Tests, harness.Test{ID: fmt.Sprintf("%s-%s-%d-%d", name, id, l, i), DomainID: id, Level: l,
					Prompt: fmt.Sprintf("Tree %s, question %d?", name, i), Expected: harness.Expected{Answer: strconv.Itoa(i)},
					Tools: []string{"tool-" + name}})
			}
		}
	}
	return s
}

// TestCrashHelper is the helper process; it does nothing in a normal run.
func TestCrashHelper(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("helper process of the crash tests")
	}
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "gauntlet.db"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	c, _, err := Open(ctx, Options{Dir: dir, DB: db})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	mode := os.Getenv(crashEnvMode)
	if step, ok := strings.CutPrefix(mode, "pause:"); ok {
		step, nth, _ := strings.Cut(step, ":")
		n, _ := strconv.Atoi(nth)
		seen := 0
		switchHook = func(s string) {
			if s != step {
				return
			}
			if seen++; seen == max(n, 1) {
				fmt.Println("paused")
				select {} // until killed
			}
		}
	}
	fmt.Println("writing")
	tree := os.Getenv(crashEnvStart)
	for {
		if _, err := c.Import(ctx, crashTree(tree), false); err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		if mode != "loop" {
			fmt.Println("finished")
			os.Exit(0)
		}
		tree = map[string]string{"a": "b", "b": "a"}[tree]
	}
}

// runCrashHelper starts the helper over dir, waits until it prints want,
// waits delay more and kills it with SIGKILL.
func runCrashHelper(t *testing.T, dir, mode, start, want string, delay time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$")
	cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvMode+"="+mode, crashEnvStart+"="+start)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(30 * time.Second)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("helper exited before %q", want)
			}
			if strings.HasPrefix(line, "error:") {
				t.Fatalf("helper: %s", line)
			}
			if line == want {
				break wait
			}
		case <-timeout:
			cmd.Process.Kill()
			t.Fatalf("helper did not print %q", want)
		}
	}
	// delay picks the moment of the crash (0 when the helper paused itself
	// at the chosen step), not a wait for anything: whatever the moment,
	// the tree left must be whole.
	time.Sleep(delay)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines {
		}
	}()
	cmd.Wait()
}

// treeFiles returns the files of the definitions tree a catalog writes for
// a snapshot.
func treeFiles(t *testing.T, s *harness.Snapshot) map[string]string {
	t.Helper()
	c := newCatalog(t)
	if _, err := c.Import(context.Background(), s, false); err != nil {
		t.Fatal(err)
	}
	return dirFiles(t, c.Dir())
}

// whichTree opens a catalog over dir, as a restart does, and says which
// of the two trees it holds, failing the test when it is neither.
func whichTree(t *testing.T, dir string, a, b map[string]string) string {
	t.Helper()
	c, res := openAt(t, dir)
	if len(res.Errors) != 0 {
		t.Fatalf("after the crash, sync reports %+v", res.Errors)
	}
	got := dirFiles(t, dir)
	var name string
	switch {
	case maps.Equal(got, a):
		name = "a"
	case maps.Equal(got, b):
		name = "b"
	default:
		t.Fatalf("after the crash the directory holds neither tree: %v", slices.Sorted(maps.Keys(got)))
	}
	// Every level with tests has a file, hence 18 levels.
	if want := (Counts{Domains: 6, Levels: 18, Tests: 72, Evaluators: 1, Tools: 1}); res.Loaded != want {
		t.Fatalf("loaded %+v, want %+v", res.Loaded, want)
	}
	// The catalog works: the next replace goes through.
	if _, err := c.Import(context.Background(), crashTree("a"), false); err != nil {
		t.Fatal(err)
	}
	return name
}

// A replace import killed at any point leaves the old tree or the new one
// once the catalog is opened again, never a mix.
func TestReplaceImportSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts helper processes")
	}
	a, b := treeFiles(t, crashTree("a")), treeFiles(t, crashTree("b"))
	cases := []struct {
		step string // the step of the switch the helper is killed at
		nth  int
		want string // the tree left
	}{
		{"staged", 1, "a"},    // every new file written, not committed
		{"committed", 1, "b"}, // committed, nothing applied
		{"applied", 1, "b"},   // one file switched
		{"applied", 20, "b"},  // about half
		{"done", 1, "b"},      // applied, the staging folder gone, the cache not updated
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %d", tc.step, tc.nth), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "definitions")
			c, _ := openAt(t, dir)
			if _, err := c.Import(context.Background(), crashTree("a"), false); err != nil {
				t.Fatal(err)
			}
			runCrashHelper(t, dir, fmt.Sprintf("pause:%s:%d", tc.step, tc.nth), "b", "paused", 0)
			if tc.step != "done" {
				// The crash left its traces: a staging or pending folder.
				hidden := false
				for rel := range dirFiles(t, dir) {
					hidden = hidden || strings.HasPrefix(rel, ".")
				}
				if !hidden {
					t.Fatal("no staged files found after the kill: the helper paused too late")
				}
			}
			if got := whichTree(t, dir, a, b); got != tc.want {
				t.Fatalf("tree %s after the kill, want %s", got, tc.want)
			}
		})
	}
	t.Run("random moments", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "definitions")
		c, _ := openAt(t, dir)
		if _, err := c.Import(context.Background(), crashTree("a"), false); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for i := range 6 {
			runCrashHelper(t, dir, "loop", "b", "writing", time.Duration(rand.IntN(60)+i*10)*time.Millisecond)
			seen[whichTree(t, dir, a, b)]++
		}
		t.Logf("trees after the kills: %v", seen)
	})
}

// Open removes what a crashed writer leaves: temporary files beside the
// definition files, and staging folders.
func TestOpenRemovesStaleTemporaryFiles(t *testing.T) {
	t.Parallel()
	dir := copyDefinitions(t)
	stale := []string{
		".tmp-switch-123/files/domains/math/level-1.yaml",
		".tmp-switch-123/manifest.json",
		"evaluators/.tmp-number.yaml-99",
		"tools/.tmp-weather.yaml-1",
		"domains/math/.tmp-level-1.yaml-42",
		"domains/.tmp-x",
	}
	for _, rel := range stale {
		writeFile(t, dir, rel, "half written")
	}
	// Hidden files that are not the catalog's stay.
	writeFile(t, dir, ".gitignore", "*.bak\n")
	writeFile(t, dir, "domains/math/.notes", "keep me\n")
	_, res := openAt(t, dir)
	if len(res.Errors) != 0 || res.Loaded != testdataCounts {
		t.Fatalf("sync: %+v", res)
	}
	files := dirFiles(t, dir)
	for _, rel := range stale {
		if _, ok := files[rel]; ok {
			t.Errorf("%s is left", rel)
		}
	}
	for _, rel := range []string{".gitignore", "domains/math/.notes", "domains/math/level-1.yaml"} {
		if _, ok := files[rel]; !ok {
			t.Errorf("%s was removed", rel)
		}
	}
}

// A pending change set whose manifest names a path outside the directory
// is refused, not followed.
func TestPendingSwitchWithBadPathIsRefused(t *testing.T) {
	t.Parallel()
	dir := copyDefinitions(t)
	writeFile(t, dir, pendingName+"/"+manifestName, `{"write":[],"remove":["../outside.yaml"]}`)
	outside := filepath.Join(filepath.Dir(dir), "outside.yaml")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Open(context.Background(), Options{Dir: dir, DB: openDB(t)})
	if err == nil || !strings.Contains(err.Error(), "bad definitions path") {
		t.Fatalf("Open: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("the file outside was touched: %v", err)
	}
}

// A process killed while it removed an applied change set leaves the set
// without its manifest (removed first, or in any order): Open finishes
// the removal instead of refusing the directory ever after.
func TestPendingSwitchHalfRemovedIsFinished(t *testing.T) {
	t.Parallel()
	dir := copyDefinitions(t)
	writeFile(t, dir, pendingName+"/"+stagedFiles+"/domains/math/level-9.yaml", "left over")
	_, res := openAt(t, dir)
	if len(res.Errors) != 0 || res.Loaded != testdataCounts {
		t.Fatalf("sync: %+v", res)
	}
	for rel := range dirFiles(t, dir) {
		if strings.HasPrefix(rel, pendingName) || strings.HasPrefix(rel, tmpPrefix) || strings.Contains(rel, "level-9") {
			t.Errorf("%s is left", rel)
		}
	}
}
