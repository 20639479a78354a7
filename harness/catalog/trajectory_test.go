package catalog

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// TestLoadExpectedTrajectory: a test's expected.trajectory is read from
// its level file and given back; a level file whose trajectory is wrong is
// refused with an error naming the test's field, and an unknown key in it
// is an unknown-key problem.
func TestLoadExpectedTrajectory(t *testing.T) {
	t.Parallel()
	bad := func(trajectory string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("tests:\n  - id: x\n    prompt: Go.\n    expected:\n      answer: a\n      type: tool_call\n" +
			"      trajectory: " + trajectory + "\n")}
	}
	fsys := fstest.MapFS{
		"domains/tr/domain.yaml": {Data: []byte("name: Trajectories\n")},
		"domains/tr/level-1.yaml": {Data: []byte("tests:\n" +
			"  - id: trip\n    prompt: Plan the trip.\n" +
			"    expected:\n      answer: book\n      type: tool_call\n" +
			"      trajectory:\n        tools: [search, book]\n        mode: in_order\n" +
			"        arguments:\n          - {q: Paris, n: 2}\n        max_steps: 5\n")},
		"domains/tr/level-2.yaml": bad("{tools: [a], mode: strict}"),
		"domains/tr/level-3.yaml": bad("{tools: [], mode: exact}"),
		"domains/tr/level-4.yaml": bad("{tools: [a, 'b c'], mode: exact}"),
		"domains/tr/level-5.yaml": bad("{tools: [a], mode: exact, arguments: [{x: 1}, {y: 2}]}"),
		"domains/tr/level-6.yaml": bad("{tools: [a], mode: subset, max_steps: 0}"),
		"domains/tr/level-7.yaml": bad("{tools: [a], mode: exact, max_step: 3}"),
		"domains/tr/level-8.yaml": bad("{tools: [a, b], mode: any_order, max_steps: 1}"),
	}
	c, res := loadAt(t, fsys)
	if res.Loaded.Tests != 1 {
		t.Errorf("loaded %+v, want the one valid test", res.Loaded)
	}
	got, err := c.Test(context.Background(), "trip")
	if err != nil {
		t.Fatal(err)
	}
	if tr := got.Expected.Trajectory; tr == nil || !reflect.DeepEqual(tr.Tools, []string{"search", "book"}) || tr.Mode != harness.TrajectoryInOrder ||
		len(tr.Arguments) != 1 || tr.Arguments[0]["q"] != "Paris" || tr.MaxSteps == nil || *tr.MaxSteps != 5 {
		t.Fatalf("trip: trajectory %+v", got.Expected.Trajectory)
	}
	errs := map[string]string{}
	for _, fe := range res.Errors {
		errs[fe.File] = fe.Error
	}
	for file, want := range map[string]string{
		"domains/tr/level-2.yaml": `expected.trajectory.mode: unknown mode "strict"`,
		"domains/tr/level-3.yaml": "expected.trajectory.tools: is required",
		"domains/tr/level-4.yaml": "expected.trajectory.tools[1]: must be a function name",
		"domains/tr/level-5.yaml": "expected.trajectory.arguments: has 2 entries",
		"domains/tr/level-6.yaml": "expected.trajectory.max_steps: must be at least 1",
		"domains/tr/level-7.yaml": "max_step",
		"domains/tr/level-8.yaml": "expected.trajectory.max_steps: is 1",
	} {
		if msg := errs[file]; !strings.Contains(msg, want) {
			t.Errorf("%s: error %q, want it to contain %q", file, msg, want)
		}
	}
}

// TestTrajectoryWrittenAndReread: a trajectory stored through the catalog
// is written to its level file and read back the same by a catalog opened
// afresh on the files (null arguments included), and stored in the cache.
func TestTrajectoryWrittenAndReread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	defs := t.TempDir()
	c, _ := openAt(t, defs)
	if _, err := c.CreateDomain(ctx, harness.Domain{ID: "tr", Name: "Trajectories"}); err != nil {
		t.Fatal(err)
	}
	three := 3
	tr := &harness.Trajectory{Tools: []string{"search", "book"}, Mode: harness.TrajectoryAnyOrder,
		Arguments: []map[string]any{nil, {"seat": map[string]any{"row": 12.0}, "note": "a: b"}}, MaxSteps: &three}
	if _, err := c.CreateTest(ctx, harness.Test{ID: "trip", DomainID: "tr", Level: 1, Prompt: "Book it.",
		Expected: harness.Expected{Type: "tool_call", Answer: "book", Trajectory: tr}}); err != nil {
		t.Fatal(err)
	}
	for name, cat := range map[string]*Catalog{"written": c, "reread": func() *Catalog { c2, _ := openAt(t, defs); return c2 }()} {
		got, err := cat.Test(ctx, "trip")
		if err != nil {
			t.Fatal(err)
		}
		g := got.Expected.Trajectory
		if g == nil || !reflect.DeepEqual(g.Tools, tr.Tools) || g.Mode != tr.Mode || g.MaxSteps == nil || *g.MaxSteps != 3 ||
			len(g.Arguments) != 2 || len(g.Arguments[0]) != 0 || g.Arguments[1]["note"] != "a: b" {
			t.Errorf("%s: trajectory %+v", name, g)
		}
		// Whatever form the numbers take, they match as JSON numbers.
		res, err := harness.MatchTrajectory(*g, []harness.ToolCall{{Name: "book", Arguments: `{"seat":{"row":12},"note":"a: b"}`}, {Name: "search"}})
		if err != nil || !res.Passed {
			t.Errorf("%s: match %+v, %v", name, res, err)
		}
	}
}
