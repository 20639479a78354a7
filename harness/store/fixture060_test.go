package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestFixtureDatabase060 opens a database made before latency figures
// (runs schema 13): its results have no time to first token and no
// output speed, its streamed run's calls keep theirs; its settled and
// partial cells get the percentiles of their answered results' durations
// and no time to first token, its skipped cells none, its runs the
// percentiles of all their answered results; a stopped run
// resumed measures the cells it finishes from all their results.
func TestFixtureDatabase060(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixtureFile(t, "gauntlet-0.6.0.db")
	if v, err := store.Version(ctx, db, "runs"); v != 13 || err != nil {
		t.Fatalf("the fixture's runs schema version = %d, %v; want 13", v, err)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatalf("runs on the 0.6.0 database: %v", err)
	}
	list, total, err := rs.List(ctx, 100, 0)
	if err != nil || total != 5 {
		t.Fatalf("runs = %d, %v; want the fixture's 5", total, err)
	}
	byName := byLabel(t, list)
	for _, name := range []string{"fixture-complete", "fixture-streamed", "fixture-arith", "fixture-stopped", "fixture-crashed"} {
		info, err := rs.Run(ctx, byName[name].RunID)
		if err != nil {
			t.Fatal(err)
		}
		results, err := rs.Results(ctx, info.RunID)
		if err != nil {
			t.Fatal(err)
		}
		durations := map[string][]int64{}
		for _, r := range results {
			if r.TTFTMS != nil || r.OutputTokensPerS != nil {
				t.Errorf("%s/%s: ttft %v, speed %v; want none", name, r.TestID, r.TTFTMS, r.OutputTokensPerS)
			}
			if streamed := info.Config != nil && info.Config.Stream; len(r.Calls) == 0 || !streamed && r.Calls[0].TTFTMS > 0 {
				t.Errorf("%s/%s: calls %+v; streamed %v", name, r.TestID, r.Calls, streamed)
			}
			if r.Status != runs.TestError {
				k := r.Domain + "/" + itoaLevel(r.Level)
				durations[k] = append(durations[k], r.DurationMS)
			}
		}
		m, err := rs.Matrix(ctx, info.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var all []int64
		for _, d := range durations {
			all = append(all, d...)
		}
		slices.Sort(all)
		if info.TTFTP50MS != nil || len(all) > 0 && (!same(info.LatencyP50MS, runs.Percentile(all, 0.5)) || !same(info.LatencyP95MS, runs.Percentile(all, 0.95))) {
			t.Errorf("%s: latency %v/%v/%v; want the percentiles of %v and no ttft", name, info.LatencyP50MS, info.LatencyP95MS, info.TTFTP50MS, all)
		}
		for domain, levels := range m {
			for level, c := range levels {
				d := durations[domain+"/"+level]
				slices.Sort(d)
				if c.TTFTP50MS != nil {
					t.Errorf("%s %s/%s: ttft p50 %d; want none", name, domain, level, *c.TTFTP50MS)
				}
				if c.Status == runs.CellSkipped || c.Status == runs.CellPending || c.Status == runs.CellRunning || len(d) == 0 {
					if c.LatencyP50MS != nil || c.LatencyP95MS != nil {
						t.Errorf("%s %s/%s (%s): latency %v/%v; want none", name, domain, level, c.Status, c.LatencyP50MS, c.LatencyP95MS)
					}
					continue
				}
				if c.LatencyP50MS == nil || *c.LatencyP50MS != *runs.Percentile(d, 0.5) || c.LatencyP95MS == nil || *c.LatencyP95MS != *runs.Percentile(d, 0.95) {
					t.Errorf("%s %s/%s (%s): latency %v/%v; want the percentiles of %v", name, domain, level, c.Status, c.LatencyP50MS, c.LatencyP95MS, d)
				}
			}
		}
	}

	// Resumed, a run measures a cell it finishes from all its results,
	// those stored before included.
	stopped := byName["fixture-stopped"].RunID
	if _, err := rs.ReopenRun(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	m, _ := rs.Matrix(ctx, stopped)
	var domain string
	var level int
	for d, levels := range m {
		for l, c := range levels {
			if c.Status == runs.CellPending && c.Done > 0 {
				domain, level = d, int(l[0]-'0')
			}
		}
	}
	if domain == "" {
		t.Fatalf("the stopped run has no cell left half done: %+v", m)
	}
	ttft := int64(40)
	p50, p95 := int64(7), int64(9)
	c := runs.Cell{Status: runs.CellPassed, LatencyP50MS: &p50, LatencyP95MS: &p95, TTFTP50MS: &ttft}
	if err := rs.SaveCell(ctx, stopped, domain, level, c); err != nil {
		t.Fatal(err)
	}
	after, _ := rs.Matrix(ctx, stopped)
	if got := after[domain][itoaLevel(level)]; !same(got.LatencyP50MS, &p50) || !same(got.LatencyP95MS, &p95) || !same(got.TTFTP50MS, &ttft) {
		t.Errorf("resumed cell %+v; want the figures saved", got)
	}
	if err := catalog.Migrate(ctx, db); err != nil { // as a server opening it would
		t.Fatal(err)
	}
	checkCurrentVersions(t, db)
}

func itoaLevel(n int) string { return string(rune('0' + n)) }

func same(a, b *int64) bool { return a != nil && b != nil && *a == *b }
