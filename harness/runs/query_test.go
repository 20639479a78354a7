package runs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// seedQuery stores run "q" with 40 results over two domains and two
// levels: scores, durations and statuses vary, some scores and durations
// tie (so that the id must break ties), and a few prompts and responses
// carry words the searches look for.
func seedQuery(t testing.TB, s *runs.Store) []runs.Result {
	t.Helper()
	ctx := context.Background()
	// 40 samples: filters keeping a quarter or less of them are selective,
	// and read through their own index.
	info := newInfo("q")
	info.TotalTests = 40
	if err := s.CreateRun(ctx, info, cells); err != nil {
		t.Fatal(err)
	}
	var all []runs.Result
	for i := range 40 {
		domain, level := "math", 1+i%2
		if i%4 == 3 {
			domain = "words"
		}
		status, score := runs.TestPassed, 1.0
		switch {
		case i%5 == 0:
			status, score = runs.TestError, 0
		case i%3 == 0:
			status, score = runs.TestFailed, float64(i%4)/4
		}
		r := result("q", domain, level, fmt.Sprintf("t%02d", i), score, status)
		r.DurationMS = int64(10 * (i % 7))
		r.Prompt = fmt.Sprintf("Question %d", i)
		switch i {
		case 7:
			r.Response = "The HIPPO is grey."
		case 8:
			r.Prompt = "Is 100% of _this_ true?"
		case 9:
			r.Response = "100 percent, hippo"
		}
		all = append(all, r)
	}
	if err := s.SaveResults(ctx, all); err != nil {
		t.Fatal(err)
	}
	return all
}

func ids(rs []runs.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.TestID
	}
	return out
}

// pages reads every page of q with limit n, following the cursors.
func pages(t *testing.T, s *runs.Store, q runs.ResultQuery, n int) ([]runs.Result, int) {
	t.Helper()
	q.Limit = n
	var out []runs.Result
	total := -1
	for range 1000 {
		p, err := s.QueryResults(context.Background(), "q", q)
		if err != nil {
			t.Fatalf("query %+v: %v", q, err)
		}
		if total >= 0 && p.Total != total {
			t.Errorf("total changed from %d to %d between pages", total, p.Total)
		}
		total = p.Total
		if len(p.Results) > n {
			t.Fatalf("page of %d results, limit %d", len(p.Results), n)
		}
		out = append(out, p.Results...)
		if p.NextCursor == "" {
			return out, total
		}
		if len(p.Results) != n {
			t.Fatalf("a page of %d results before the last, limit %d", len(p.Results), n)
		}
		q.Cursor = p.NextCursor
	}
	t.Fatal("more than 1000 pages")
	return nil, 0
}

func TestQueryResults(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	all := seedQuery(t, s)
	level2 := 2
	ordered := func(keep func(runs.Result) bool, cmp func(a, b runs.Result) int) []string {
		var rs []runs.Result
		for _, r := range all {
			if keep == nil || keep(r) {
				rs = append(rs, r)
			}
		}
		if cmp != nil {
			// all is in storage order, so a stable sort breaks ties by it.
			slices.SortStableFunc(rs, cmp)
		}
		return ids(rs)
	}
	byScore := func(a, b runs.Result) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		}
		return 0
	}
	byDuration := func(a, b runs.Result) int { return int(a.DurationMS - b.DurationMS) }
	reversed := func(s []string) []string { s = slices.Clone(s); slices.Reverse(s); return s }
	for _, tc := range []struct {
		name string
		q    runs.ResultQuery
		want []string
	}{
		{"everything in storage order", runs.ResultQuery{}, ordered(nil, nil)},
		{"descending storage order", runs.ResultQuery{Sort: "-id"}, reversed(ordered(nil, nil))},
		{"by score", runs.ResultQuery{Sort: "score"}, ordered(nil, byScore)},
		{"by score descending", runs.ResultQuery{Sort: "-score"}, reversed(ordered(nil, byScore))},
		{"by duration", runs.ResultQuery{Sort: "duration_ms"}, ordered(nil, byDuration)},
		{"errors", runs.ResultQuery{Status: runs.TestError}, ordered(func(r runs.Result) bool { return r.Status == runs.TestError }, nil)},
		{"failed by score descending", runs.ResultQuery{Status: runs.TestFailed, Sort: "-score"},
			reversed(ordered(func(r runs.Result) bool { return r.Status == runs.TestFailed }, byScore))},
		{"errors by duration descending", runs.ResultQuery{Status: runs.TestError, Sort: "-duration_ms"},
			reversed(ordered(func(r runs.Result) bool { return r.Status == runs.TestError }, byDuration))},
		{"one cell", runs.ResultQuery{Domain: "math", Level: &level2},
			ordered(func(r runs.Result) bool { return r.Domain == "math" && r.Level == 2 }, nil)},
		{"a domain by duration descending", runs.ResultQuery{Domain: "words", Sort: "-duration_ms"},
			reversed(ordered(func(r runs.Result) bool { return r.Domain == "words" }, byDuration))},
		{"search ignores case, in responses", runs.ResultQuery{Search: "hippo"}, []string{"t07", "t09"}},
		{"search in prompts, % is no wildcard", runs.ResultQuery{Search: "100%"}, []string{"t08"}},
		{"_ is no wildcard", runs.ResultQuery{Search: "_this_"}, []string{"t08"}},
		{"search in test ids", runs.ResultQuery{Search: "T1"}, []string{"t10", "t11", "t12", "t13", "t14", "t15", "t16", "t17", "t18", "t19"}},
		{"search and filter", runs.ResultQuery{Search: "hippo", Domain: "words"}, []string{"t07"}},
		{"nothing", runs.ResultQuery{Domain: "none"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []int{1, 3, 7, 1000} {
				got, total := pages(t, s, tc.q, n)
				if !slices.Equal(ids(got), tc.want) {
					t.Fatalf("pages of %d: %v\nwant %v", n, ids(got), tc.want)
				}
				if total != len(tc.want) {
					t.Errorf("pages of %d: total %d, want %d", n, total, len(tc.want))
				}
			}
			var each []runs.Result
			if err := s.EachResult(context.Background(), "q", tc.q, func(r runs.Result) error { each = append(each, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(each), tc.want) {
				t.Errorf("EachResult: %v\nwant %v", ids(each), tc.want)
			}
		})
	}
}

func TestQueryResultsDefaultsAndEnd(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	all := seedQuery(t, s)
	ctx := context.Background()
	p, err := s.QueryResults(ctx, "q", runs.ResultQuery{})
	if err != nil || len(p.Results) != len(all) || p.NextCursor != "" || p.Total != len(all) {
		t.Fatalf("default page: %d results, total %d, cursor %q, %v", len(p.Results), p.Total, p.NextCursor, err)
	}
	if p.Results[0].Prompt != all[0].Prompt || p.Results[0].Details["extracted_answer"] != "42" {
		t.Errorf("first result %+v", p.Results[0])
	}
	// Exactly a page: no cursor to an empty page.
	p, err = s.QueryResults(ctx, "q", runs.ResultQuery{Limit: len(all)})
	if err != nil || len(p.Results) != len(all) || p.NextCursor != "" {
		t.Errorf("a page of exactly all: %d results, cursor %q, %v", len(p.Results), p.NextCursor, err)
	}
	// A result stored after a page was read shows on the next page: a live
	// run is read as it grows.
	p, err = s.QueryResults(ctx, "q", runs.ResultQuery{Limit: 39})
	if err != nil || p.NextCursor == "" {
		t.Fatalf("39 of 40: cursor %q, %v", p.NextCursor, err)
	}
	if err := s.SaveResults(ctx, []runs.Result{result("q", "math", 1, "late", 1, runs.TestPassed)}); err != nil {
		t.Fatal(err)
	}
	p, err = s.QueryResults(ctx, "q", runs.ResultQuery{Limit: 39, Cursor: p.NextCursor})
	if err != nil || !slices.Equal(ids(p.Results), []string{"t39", "late"}) || p.Total != 41 {
		t.Errorf("next page %v, total %d, %v; want t39, late of 41", ids(p.Results), p.Total, err)
	}
}

func TestQueryResultsErrors(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	seedQuery(t, s)
	ctx := context.Background()
	p, err := s.QueryResults(ctx, "q", runs.ResultQuery{Sort: "score", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	scoreCursor := p.NextCursor
	neg := -1
	for _, tc := range []struct {
		name  string
		run   string
		q     runs.ResultQuery
		field string // "" for not found
	}{
		{"unknown run", "nope", runs.ResultQuery{}, ""},
		{"status", "q", runs.ResultQuery{Status: "passing"}, "status"},
		{"sort", "q", runs.ResultQuery{Sort: "name"}, "sort"},
		{"sort with two dashes", "q", runs.ResultQuery{Sort: "--score"}, "sort"},
		{"negative level", "q", runs.ResultQuery{Level: &neg}, "level"},
		{"limit too large", "q", runs.ResultQuery{Limit: 1001}, "limit"},
		{"negative limit", "q", runs.ResultQuery{Limit: -1}, "limit"},
		{"cursor not base64", "q", runs.ResultQuery{Cursor: "!!!"}, "cursor"},
		{"cursor of nothing", "q", runs.ResultQuery{Cursor: "aGVsbG8"}, "cursor"},
		{"cursor of another sort", "q", runs.ResultQuery{Sort: "-score", Cursor: scoreCursor}, "cursor"},
		{"cursor with a value that is no number", "q", runs.ResultQuery{Sort: "score", Cursor: "c2NvcmV8aW5mfDM"}, "cursor"}, // score|inf|3
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.QueryResults(ctx, tc.run, tc.q)
			err2 := s.EachResult(ctx, tc.run, tc.q, func(runs.Result) error { return nil })
			if tc.field == "" {
				if !errors.Is(err, harness.ErrNotFound) || !errors.Is(err2, harness.ErrNotFound) {
					t.Fatalf("errors %v, %v; want not found", err, err2)
				}
				return
			}
			var ve *harness.ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != tc.field {
				t.Fatalf("error %v, want a validation error of %s", err, tc.field)
			}
			if tc.field != "cursor" && tc.field != "limit" && !errors.As(err2, &ve) {
				t.Errorf("EachResult: %v, want a validation error", err2)
			}
		})
	}
	// fn's error ends the walk and comes back.
	stop := errors.New("stop")
	n := 0
	if err := s.EachResult(ctx, "q", runs.ResultQuery{}, func(runs.Result) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("EachResult: %v after %d calls, want stop after 1", err, n)
	}
	if !strings.Contains(fmt.Sprint(s.QueryResults(ctx, "q", runs.ResultQuery{Sort: "-score", Cursor: scoreCursor})), "sort") {
		t.Error("the error of a cursor of another sort does not say so")
	}
}

// TestQueryResultsCommonFilters reads a run of 2,000 results whose
// filters keep hundreds: pages of a domain's or a cell's results of one
// status, and of one status alone, in every order, against the same
// results filtered and sorted here. Small pages of a filter that keeps
// many rows are looked for among the first rows of the sort's index
// first; the passed results score above every other, so ascending by
// score they are not there, and a few failed results take longest, so
// the longest rows hold part of a page of them: the rows are then read
// through the filter's index instead. Both ways give the same pages.
func TestQueryResultsCommonFilters(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	const n = 2000
	info := newInfo("q")
	info.TotalTests = n
	if err := s.CreateRun(ctx, info, nil); err != nil {
		t.Fatal(err)
	}
	var all []runs.Result
	for i := range n {
		status, score := runs.TestPassed, 0.5+float64(i%5)/10
		switch i / 4 % 10 {
		case 7, 8:
			status, score = runs.TestFailed, float64(i%4)/10
		case 9:
			status, score = runs.TestError, 0
		}
		r := result("q", fmt.Sprintf("d%d", i%4), 1+i/40%5, fmt.Sprintf("t%04d", i), score, status)
		r.DurationMS = int64(i * 37 % 101)
		if status == runs.TestFailed {
			// A few failed results take longest, the others are quick:
			// the longest rows hold a part of a page only.
			r.DurationMS = int64(i % 50)
			if i%8 == 0 {
				r.DurationMS = int64(1000 + i)
			}
		}
		all = append(all, r)
	}
	for i := 0; i < n; i += 500 {
		if err := s.SaveResults(ctx, all[i:i+500]); err != nil {
			t.Fatal(err)
		}
	}
	level := 2
	for _, q := range []runs.ResultQuery{
		{Domain: "d1", Status: runs.TestPassed, Sort: "-score"},
		{Domain: "d1", Status: runs.TestPassed, Sort: "score"},
		{Domain: "d2", Status: runs.TestPassed, Sort: "-duration_ms"},
		{Domain: "d3", Status: runs.TestFailed, Sort: "duration_ms"},
		{Domain: "d0", Status: runs.TestPassed},
		{Domain: "d0", Status: runs.TestError, Sort: "-id"},
		{Domain: "d1", Level: &level, Status: runs.TestPassed, Sort: "-score"},
		{Domain: "d1", Level: &level, Status: runs.TestFailed},
		{Status: runs.TestPassed, Sort: "-duration_ms"},
		{Status: runs.TestFailed, Sort: "-score"},
		{Status: runs.TestFailed, Sort: "score"},
		{Status: runs.TestFailed, Sort: "-duration_ms"},
	} {
		var want []runs.Result
		for _, r := range all {
			if (q.Domain == "" || r.Domain == q.Domain) && (q.Level == nil || r.Level == *q.Level) && r.Status == q.Status {
				want = append(want, r)
			}
		}
		desc := strings.HasPrefix(q.Sort, "-")
		key := func(r runs.Result) float64 {
			switch strings.TrimPrefix(q.Sort, "-") {
			case "score":
				return r.Score
			case "duration_ms":
				return float64(r.DurationMS)
			}
			return 0
		}
		slices.SortStableFunc(want, func(a, b runs.Result) int { return cmpFloat(key(a), key(b)) })
		if desc {
			slices.Reverse(want)
		}
		name := fmt.Sprintf("%s/%v/%s/%s", q.Domain, q.Level != nil, q.Status, q.Sort)
		for _, size := range []int{3, 7, 1000} {
			got, total := pages(t, s, q, size)
			if !slices.Equal(ids(got), ids(want)) || total != len(want) {
				t.Errorf("%s, pages of %d: %d results of %d, want %d (%v…)", name, size, len(got), total, len(want), ids(got)[:min(5, len(got))])
			}
		}
		var each []runs.Result
		if err := s.EachResult(ctx, "q", q, func(r runs.Result) error { each = append(each, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(each), ids(want)) {
			t.Errorf("%s, EachResult: %d results, want %d", name, len(each), len(want))
		}
	}
}

// cmpFloat orders two numbers.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
