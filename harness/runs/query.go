package runs

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// Sort keys of a ResultQuery. Each sorts ascending, and descending with a
// "-" in front ("-score"); ties are broken by the result's storage order,
// so that every order is total and a cursor names one position in it.
const (
	SortID         = "id"          // storage order: the order the results finished in
	SortScore      = "score"       // score, then storage order
	SortDurationMS = "duration_ms" // duration, then storage order
)

// MaxPageSize is the largest page QueryResults returns; DefaultPageSize
// the page of a query that names none.
const (
	MaxPageSize     = 1000
	DefaultPageSize = 100
)

// exportPage is how many rows EachResult reads per query.
const exportPage = 500

// ResultQuery selects and orders some of a run's results. The zero value
// selects every result in storage order, a page of DefaultPageSize.
type ResultQuery struct {
	Domain string // only this domain; "" for all
	Level  *int   // only this level; nil for all
	Status string // only this status: TestPassed, TestFailed or TestError; "" for all
	// Search keeps the results whose prompt, response or test id contains
	// it; "" keeps all. Case is ignored for the ASCII letters A-Z only:
	// every other character, letters such as é and É included, must
	// match exactly, and none is a wildcard or an operator (%, _, *,
	// quotes are plain text). Text is compared as SQLite decodes UTF-8
	// (an invalid byte reads as U+FFFD, a lone continuation byte as the
	// character U+0080-U+00BF of its value), and a text's part after a
	// NUL character is not searched. A search of 3
	// characters or more is looked up in the search index; a shorter one
	// reads every result the other filters keep; both find the same
	// results. It must be UTF-8 without NUL (Check). On PostgreSQL the rules
	// are the same, answered by trigram indexes.
	Search string
	// Sort is SortID (the default), SortScore or SortDurationMS, with a
	// "-" in front for descending.
	Sort string
	// Limit is the page size, 1 to MaxPageSize; 0 means DefaultPageSize.
	Limit int
	// Cursor continues after the last result of a previous page of the
	// same sort: that page's NextCursor. "" starts at the beginning.
	Cursor string
}

// ResultPage is one page of a query's results.
type ResultPage struct {
	Results []Result
	// Total counts every result the query's filters select, on every page.
	Total int
	// NextCursor continues after this page; "" when it is the last one.
	NextCursor string
	// SearchIndex says, for a query with a search, how far the search
	// index has caught up with the run's results; nil without a search.
	SearchIndex *SearchIndexState
}

// sortSpec is a parsed sort: the column and the direction.
type sortSpec struct {
	key  string // the sort as given, "-score"
	col  string // "id", "score", "duration_ms"
	desc bool
}

func parseSort(s string) (sortSpec, error) {
	if s == "" {
		s = SortID
	}
	col, desc := strings.CutPrefix(s, "-")
	if !slices.Contains([]string{SortID, SortScore, SortDurationMS}, col) {
		return sortSpec{}, harness.Invalid("sort", "must be id, score or duration_ms, with - in front for descending; got %q", s)
	}
	return sortSpec{key: s, col: col, desc: desc}, nil
}

// position is where a page ends: the sort value and the id of its last
// row. For SortID the value is the id.
type position struct {
	value any // the sort column's value: float64 for score, int64 otherwise
	id    int64
}

// text is the position's value as decimal text.
func (p position) text() string {
	if f, ok := p.value.(float64); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatInt(p.value.(int64), 10)
}

// encodeCursor makes the opaque cursor of a position under a sort:
// base64url of "sort|value|id".
func encodeCursor(sort sortSpec, p position) string {
	return base64.RawURLEncoding.EncodeToString([]byte(sort.key + "|" + p.text() + "|" + strconv.FormatInt(p.id, 10)))
}

// decodeCursor reads a cursor made by encodeCursor for the same sort.
func decodeCursor(sort sortSpec, cursor string) (position, error) {
	bad := func(why string) error {
		return harness.Invalid("cursor", "%s: pass next_cursor of the previous page as it is", why)
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return position{}, bad("not a cursor")
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 {
		return position{}, bad("not a cursor")
	}
	if parts[0] != sort.key {
		return position{}, harness.Invalid("cursor", "made for sort %q, not %q: start again without a cursor after changing the sort", parts[0], sort.key)
	}
	id, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return position{}, bad("not a cursor")
	}
	p := position{id: id}
	if sort.col == SortScore {
		f, err := strconv.ParseFloat(parts[1], 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return position{}, bad("not a cursor")
		}
		p.value = f
	} else {
		n, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			return position{}, bad("not a cursor")
		}
		p.value = n
	}
	return p, nil
}

// Check reports what is wrong with q's filters, sort and limit (not its
// cursor): a *harness.ValidationError naming each field at fault, or nil.
func (q ResultQuery) Check() error {
	_, err := checkQuery(q)
	return err
}

// checkQuery validates q's filters and returns its sort.
func checkQuery(q ResultQuery) (sortSpec, error) {
	ve := &harness.ValidationError{}
	if q.Status != "" && !slices.Contains([]string{TestPassed, TestFailed, TestError}, q.Status) {
		ve.Add("status", "must be passed, failed or error; got %q", q.Status)
	}
	if strings.ContainsRune(q.Search, 0) || !utf8.ValidString(q.Search) {
		ve.Add("q", "must be UTF-8 text without NUL characters")
	}
	if q.Level != nil && *q.Level < 0 {
		ve.Add("level", "must be 0 or more")
	}
	if q.Limit < 0 || q.Limit > MaxPageSize {
		ve.Add("limit", "must be between 1 and %d", MaxPageSize)
	}
	sort, err := parseSort(q.Sort)
	ve.Merge("", err)
	return sort, ve.Err()
}

// filter adds q's filters to a select of run_results, the search as a
// LIKE scan (see likeSearch).
func filter(sel *bun.SelectQuery, runID string, q ResultQuery) *bun.SelectQuery {
	return filterRest(sel.Where("run_id = ?", runID), q)
}

// filterRest adds q's filters but the run to a select of run_results,
// the search as a LIKE scan.
func filterRest(sel *bun.SelectQuery, q ResultQuery) *bun.SelectQuery {
	sel = filterFields(sel, q, "")
	if q.Search != "" {
		sel = likeSearch(sel, q.Search)
	}
	return sel
}

// filterFields adds q's domain, level and status filters, each column
// named with prefix before it: "r." in a join, "+" to keep SQLite from
// reaching the rows through an index on the column.
func filterFields(sel *bun.SelectQuery, q ResultQuery, prefix string) *bun.SelectQuery {
	if q.Domain != "" {
		sel = sel.Where(prefix+"domain = ?", q.Domain)
	}
	if q.Level != nil {
		sel = sel.Where(prefix+"level = ?", *q.Level)
	}
	if q.Status != "" {
		sel = sel.Where(prefix+"status = ?", q.Status)
	}
	return sel
}

// A plan says how page reads the rows: which index walks them. SQLite
// keeps no statistics here, and its own choice reads a whole run's rows
// and sorts them where an index gives their order (a run sorted by id:
// no index is (run_id, id)), or walks the whole sort index when a
// selective filter would find the few rows at once.
type plan int

const (
	// planNatural leaves the choice to SQLite: an index gives both the
	// filter and the order (a cell or a status in storage order, or the
	// sort index of score or duration_ms for an unselective filter).
	planNatural plan = iota
	// planRowid walks the table itself in id order from the run's first
	// (or last) result, filtering by run: storage order with no index
	// that has it.
	planRowid
	// planFilterIndex finds the rows through the index of the filter
	// (status, domain and level, or both) and sorts their ids by the sort
	// column: a selective filter with a score or duration sort. When the
	// filter keeps many rows all the same (a domain's passed results of
	// a million), the sort's own index is walked first for a bounded
	// number of rows (probeSort): reading the page there is cheaper than
	// reading every kept row, unless the sort and the filter are
	// correlated, which the bound catches.
	planFilterIndex
	// planSearchIndex finds the rows through the search index and sorts
	// them: a selective search that the index answers (searchIndexed).
	// A search that keeps many results is read in the sort's order
	// instead, each row tested by the LIKE scan, which keeps exactly the
	// rows the index finds and stops at the page's end.
	planSearchIndex
	// planLevels reads a domain's results of one status in storage order
	// or by score through the index of cell and status: each level's
	// range of it holds them in that order (run_results_cell_status by
	// id, run_results_cell_score by score), so the page is the first rows
	// of each level's range, merged. A run stores its results domain by
	// domain, and most scores tie (1 or 0), so neither the status index
	// in id order nor the score index finds a domain's rows early: they
	// would walk the domains stored before it.
	planLevels
)

// levelIndex is the index planLevels walks for each sort.
var levelIndex = map[string]string{SortID: "run_results_cell_status", SortScore: "run_results_cell_score"}

// choosePlan picks the plan of a query; selective says which index finds
// its rows at once. The plans are SQLite's: PostgreSQL keeps statistics
// and plans well by itself (and has neither INDEXED BY nor the unary +
// that keeps an index out), so it always gets planNatural.
func choosePlan(db bun.IDB, q ResultQuery, sort sortSpec, selective selectivity) (plan, string) {
	if sqldb.IsPG(db) {
		return planNatural, ""
	}
	if selective.search && searchIndexed(db, q.Search) {
		return planSearchIndex, ""
	}
	if q.Domain != "" && q.Status != "" && q.Search == "" && levelIndex[sort.col] != "" {
		return planLevels, levelIndex[sort.col]
	}
	filterIndex := ""
	switch {
	case q.Status != "" && q.Domain != "":
		filterIndex = "run_results_cell_status"
	case q.Status != "":
		filterIndex = "run_results_status"
	case q.Domain != "":
		filterIndex = "run_results_cell"
	}
	if sort.col == SortID {
		if q.Status != "" || (q.Domain != "" && q.Level != nil) {
			return planNatural, ""
		}
		return planRowid, ""
	}
	if selective.filter && filterIndex != "" {
		return planFilterIndex, filterIndex
	}
	return planNatural, ""
}

// page reads up to limit rows of the query after position from (nil: from
// the start), in the sort's order.
func (s *Store) page(ctx context.Context, runID string, q ResultQuery, sort sortSpec, from *position, limit int, selective selectivity) ([]resultRow, error) {
	p, index := choosePlan(s.db, q, sort, selective)
	if p == planRowid {
		return s.pageByRowid(ctx, runID, q, sort, from, limit)
	}
	if p == planLevels {
		levels, err := s.levelsOf(ctx, runID, q)
		if err != nil || len(levels) == 0 {
			return nil, err
		}
		return s.pageLevels(ctx, runID, q, sort, from, limit, levels)
	}
	src, ok, err := s.source(ctx, runID, q, p, index)
	if err != nil || !ok {
		return nil, err
	}
	if p == planFilterIndex {
		src.probe = selective.probe(limit)
	}
	// Through the search index, the position must not lead SQLite to
	// walk the table or an index from it: + keeps it a plain test.
	col, id := sort.col, "id"
	if p == planSearchIndex {
		col, id = "+"+col, "+id"
	}
	if from == nil || sort.col == SortID {
		return s.pageAfter(ctx, sort, src, limit, func(sel *bun.SelectQuery) *bun.SelectQuery {
			if from == nil {
				return sel
			}
			return sel.Where(id+" "+sort.cmp()+" ?", from.id)
		})
	}
	// After (value, id): first the rest of the rows that tie on value,
	// then those past it. Each is one seek into the (run_id, column, id)
	// index; a row value comparison (column, id) > (value, id) would seek
	// on the value alone and walk every tie before the position again.
	rows, err := s.pageAfter(ctx, sort, src, limit, func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where(col+" = ?", from.value).Where(id+" "+sort.cmp()+" ?", from.id)
	})
	if err != nil || len(rows) == limit {
		return rows, err
	}
	more, err := s.pageAfter(ctx, sort, src, limit-len(rows), func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where(col+" "+sort.cmp()+" ?", from.value)
	})
	return append(rows, more...), err
}

// levelsOf returns the levels of q's domain that hold results in the run
// (q's level alone when it names one), each found by one seek into the
// index of cell and status.
func (s *Store) levelsOf(ctx context.Context, runID string, q ResultQuery) ([]int, error) {
	if q.Level != nil {
		return []int{*q.Level}, nil
	}
	var levels []int
	for last := math.MinInt32; ; {
		var next sql.NullInt64
		if err := s.db.NewSelect().TableExpr("run_results INDEXED BY run_results_cell_status").ColumnExpr("MIN(level)").
			Where("run_id = ? AND domain = ? AND level > ?", runID, q.Domain, last).Scan(ctx, &next); err != nil {
			return nil, fmt.Errorf("read results of %q: %w", runID, err)
		}
		if !next.Valid {
			return levels, nil
		}
		last = int(next.Int64)
		levels = append(levels, last)
	}
}

// pageLevels reads a page under planLevels: the first rows after the
// position of each level's range of the index, merged in the sort's order.
func (s *Store) pageLevels(ctx context.Context, runID string, q ResultQuery, sort sortSpec, from *position, limit int, levels []int) ([]resultRow, error) {
	read := func(limit int, where func(*bun.SelectQuery) *bun.SelectQuery) ([]resultRow, error) {
		var union *bun.SelectQuery
		for i, level := range levels {
			part := s.db.NewSelect().TableExpr("run_results INDEXED BY "+levelIndex[sort.col]).Column("id").
				Where("run_id = ? AND domain = ? AND level = ? AND status = ?", runID, q.Domain, level, q.Status)
			part = sort.order(where(part)).Limit(int64(limit))
			part = s.db.NewSelect().TableExpr("(?) AS ?", part, bun.Ident(fmt.Sprintf("l%d", i))).Column("id")
			if union == nil {
				union = part
			} else {
				union = union.UnionAll(part)
			}
		}
		var rows []resultRow
		if err := sort.order(s.db.NewSelect().Model(&rows).Where("id IN (?)", union)).Limit(int64(limit)).Scan(ctx); err != nil {
			return nil, fmt.Errorf("read results of %q: %w", runID, err)
		}
		return rows, nil
	}
	if from == nil {
		return read(limit, func(sel *bun.SelectQuery) *bun.SelectQuery { return sel })
	}
	if sort.col == SortID {
		return read(limit, func(sel *bun.SelectQuery) *bun.SelectQuery { return sel.Where("id "+sort.cmp()+" ?", from.id) })
	}
	// As page: the rest of the ties on the value, then the rows past it.
	rows, err := read(limit, func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where(sort.col+" = ?", from.value).Where("id "+sort.cmp()+" ?", from.id)
	})
	if err != nil || len(rows) == limit {
		return rows, err
	}
	more, err := read(limit-len(rows), func(sel *bun.SelectQuery) *bun.SelectQuery {
		return sel.Where(sort.col+" "+sort.cmp()+" ?", from.value)
	})
	return append(rows, more...), err
}

// rowSource says where a page's rows come from, filters included.
type rowSource struct {
	runID string
	q     ResultQuery
	// index, for planFilterIndex, is the filter's index: the ids are
	// found through it, sorted and cut before the rows are read.
	index string
	// search, for planSearchIndex: the rows are those of the ids the
	// search index finds among lo to hi, the run's, and of those past
	// through (the index's watermark) that the LIKE scan keeps.
	search          bool
	lo, hi, through int64
	// probe, for planFilterIndex, is how many rows of the sort's index
	// are walked before the filter's index is used; 0 for none.
	probe int64
}

// sortIndex is the index of each sort column but id: (run_id, column, id).
var sortIndex = map[string]string{SortScore: "run_results_score", SortDurationMS: "run_results_duration"}

// source returns the source of the query's rows under a plan other than
// planRowid; ok is false when the run has no results.
func (s *Store) source(ctx context.Context, runID string, q ResultQuery, p plan, index string) (src rowSource, ok bool, err error) {
	src = rowSource{runID: runID, q: q, index: index}
	if p == planSearchIndex {
		src.search = true
		if src.lo, src.hi, ok, err = s.idRange(ctx, runID); err != nil || !ok {
			return src, ok, err
		}
		src.through, err = s.indexedThrough(ctx)
		return src, ok, err
	}
	return src, true, nil
}

// rows selects the source's rows into model.
func (src rowSource) rows(db bun.IDB, model any) *bun.SelectQuery {
	if !src.search {
		return filter(db.NewSelect().Model(model), src.runID, src.q)
	}
	// Each row read by its id: + keeps SQLite from walking an index of
	// the other filters instead.
	ids := matchIDs(db, src.q.Search, src.lo, min(src.hi, src.through))
	if src.hi > src.through {
		// The run's results the index does not hold yet.
		ids = ids.UnionAll(pendingMatches(db.NewSelect().TableExpr(`"run_results"`).Column("id"), src.runID,
			ResultQuery{Search: src.q.Search}, src.through, src.hi))
	}
	sel := db.NewSelect().Model(model).Where("id IN (?)", ids).Where("+run_id = ?", src.runID)
	return filterFields(sel, src.q, "+")
}

// cmp is the comparison that selects the rows after a position.
func (s sortSpec) cmp() string {
	if s.desc {
		return "<"
	}
	return ">"
}

// order adds the sort's ORDER BY.
func (s sortSpec) order(sel *bun.SelectQuery) *bun.SelectQuery {
	dir := "ASC"
	if s.desc {
		dir = "DESC"
	}
	if s.col != SortID {
		sel = sel.OrderExpr(s.col + " " + dir)
	}
	return sel.OrderExpr("id " + dir)
}

// pageAfter reads up to limit rows of the source that where also keeps,
// in the sort's order.
func (s *Store) pageAfter(ctx context.Context, sort sortSpec, src rowSource, limit int,
	where func(*bun.SelectQuery) *bun.SelectQuery) ([]resultRow, error) {
	var rows []resultRow
	var sel *bun.SelectQuery
	if src.index != "" && src.probe > 0 && src.q.Search == "" {
		probe := s.db.NewSelect().TableExpr("run_results INDEXED BY "+sortIndex[sort.col]).
			Column("id", sort.col, "domain", "level", "status").Where("run_id = ?", src.runID)
		probe = sort.order(where(probe)).Limit(int64(src.probe))
		ids := filterFields(s.db.NewSelect().TableExpr("(?) AS p", probe).Column("id"), src.q, "")
		ids = sort.order(ids).Limit(int64(limit))
		if err := sort.order(s.db.NewSelect().Model(&rows).Where("id IN (?)", ids)).Limit(int64(limit)).Scan(ctx); err != nil {
			return nil, fmt.Errorf("read results of %q: %w", src.runID, err)
		}
		// A whole page among the first rows of the sort is the page;
		// otherwise the kept rows are read through the filter's index.
		if len(rows) == limit {
			return rows, nil
		}
		rows = nil
	}
	if src.index != "" {
		ids := filter(s.db.NewSelect().TableExpr("run_results INDEXED BY "+src.index).Column("id"), src.runID, src.q)
		ids = sort.order(where(ids)).Limit(int64(limit))
		sel = s.db.NewSelect().Model(&rows).Where("id IN (?)", ids)
	} else {
		sel = where(src.rows(s.db, &rows))
	}
	if err := sort.order(sel).Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read results of %q: %w", src.runID, err)
	}
	return rows, nil
}

// pageByRowid reads a page in storage order by walking the table from
// the run's first (or last) result.
func (s *Store) pageByRowid(ctx context.Context, runID string, q ResultQuery, sort sortSpec, from *position, limit int) ([]resultRow, error) {
	lo, hi, ok, err := s.idRange(ctx, runID)
	if err != nil || !ok {
		return nil, err
	}
	// The position narrows the range itself: with a second bound beside
	// it, SQLite would walk from the range's start each time.
	if from != nil && sort.desc {
		hi = min(hi, from.id-1)
	} else if from != nil {
		lo = max(lo, from.id+1)
	}
	var rows []resultRow
	// +run_id: not through an index on run_id, whose order is not id's.
	sel := filterRest(s.db.NewSelect().Model(&rows).Where("+run_id = ?", runID).Where("id BETWEEN ? AND ?", lo, hi), q)
	if err := sort.order(sel).Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read results of %q: %w", runID, err)
	}
	return rows, nil
}

// isSelective says whether a filter that keeps n results keeps few of
// the run's: a quarter or less of its samples.
func isSelective(n int64, info Info) bool {
	return info.TotalTests > 0 && n*4 <= int64(info.TotalTests)
}

// idRange returns the smallest and largest id of a run's results; ok is
// false when it has none. Each bound of each status is one step down the
// (run_id, status, id) index: one scalar subquery each, since SQLite
// walks the index for MIN or MAX alone, not for both in one select.
func (s *Store) idRange(ctx context.Context, runID string) (lo, hi int64, ok bool, err error) {
	var parts []string
	var args []any
	statuses := []string{TestPassed, TestFailed, TestError}
	for _, agg := range []string{"MIN", "MAX"} {
		for _, st := range statuses {
			parts = append(parts, `(SELECT `+agg+`(id) FROM run_results WHERE run_id = ? AND status = ?)`)
			args = append(args, runID, st)
		}
	}
	bounds := make([]sql.NullInt64, len(parts))
	dest := make([]any, len(parts))
	for i := range bounds {
		dest[i] = &bounds[i]
	}
	if err := s.db.QueryRowContext(ctx, `SELECT `+strings.Join(parts, ", "), args...).Scan(dest...); err != nil {
		return 0, 0, false, fmt.Errorf("read results of %q: %w", runID, err)
	}
	for i, b := range bounds {
		if !b.Valid {
			continue
		}
		if i < len(statuses) && (!ok || b.Int64 < lo) {
			lo, ok = b.Int64, true
		}
		if i >= len(statuses) && b.Int64 > hi {
			hi = b.Int64
		}
	}
	return lo, hi, ok, nil
}

// selectivity says which index, if any, finds a query's rows at once
// because they are few of the run's (a quarter or less): then a page is
// read through it (planSearchIndex, planFilterIndex) rather than by
// walking the run in the sort's order.
type selectivity struct {
	search bool // the search index: it matches few of the run's results, fewer than the other filters keep
	filter bool // the index of the filters (status, domain and level, or both): they keep few
	// kept is how many results the filters keep and of how many (the
	// run's tests), when counted without a search; 0 otherwise.
	kept, of int64
}

// probe is how many rows of the sort's index to walk before reading
// every kept row through the filter's index, for a page of limit rows:
// four times what a page is expected to need if the kept rows are spread
// evenly over the sort's order, or 0 (no walk) when that is no fewer
// than the kept rows themselves.
func (sel selectivity) probe(limit int) int64 {
	if sel.kept <= 0 || sel.of <= sel.kept {
		return 0
	}
	n := 4 * int64(limit) * sel.of / sel.kept
	if n >= sel.kept {
		return 0
	}
	return n
}

// joinCount is how many matches of a search countSearch reads the rows
// of without first counting the results the other filters keep. (A
// variable for the tests.)
var joinCount int64 = 2000

// count counts the results of a run that q's filters select, and says
// which index finds them at once. Without a search, a counted run's are
// summed from its cells' counters (countCells), another's counted from
// its results.
func (s *Store) count(ctx context.Context, runID string, q ResultQuery, info Info, counted bool) (int, selectivity, error) {
	var n int64
	var sel selectivity
	var err error
	indexed := false
	if searchIndexed(s.db, q.Search) {
		n, sel, indexed, err = s.countSearch(ctx, runID, q, info, counted)
	}
	if !indexed && err == nil {
		if q.Search == "" && counted {
			n, err = s.countCells(ctx, runID, q)
		} else {
			n, err = s.countFilter(ctx, runID, q)
		}
		sel.filter = isSelective(n, info)
		if q.Search == "" {
			sel.kept, sel.of = n, int64(info.TotalTests)
		}
	}
	if err != nil {
		return 0, sel, fmt.Errorf("count results of %q: %w", runID, err)
	}
	return int(n), sel, nil
}

// countCells counts the results of a counted run that q's domain, level
// and status keep (its search is not looked at) as the sum of the
// counters of the cells they keep: a few hundred rows at most, however
// many results the run holds. The counters of a counted run are its
// results' counts at every commit (SaveBatch), so the sum is the count.
func (s *Store) countCells(ctx context.Context, runID string, q ResultQuery) (int64, error) {
	col := "done"
	switch q.Status {
	case TestPassed:
		col = "passed"
	case TestFailed:
		col = "failed"
	case TestError:
		col = "errors"
	}
	sel := s.db.NewSelect().Model((*cellRow)(nil)).ColumnExpr("COALESCE(SUM(?), 0)", bun.Ident(col)).Where("run_id = ?", runID)
	if q.Domain != "" {
		sel = sel.Where("domain = ?", q.Domain)
	}
	if q.Level != nil {
		sel = sel.Where("level = ?", *q.Level)
	}
	var n int64
	err := sel.Scan(ctx, &n)
	return n, err
}

// countFilter counts the results of a run that q's filters keep, with the
// search as a LIKE scan. Domain and status together are counted through
// the index that holds both, level included, without reading a row:
// SQLite, keeping no statistics, could as well walk the status index and
// read each row for its domain.
func (s *Store) countFilter(ctx context.Context, runID string, q ResultQuery) (int64, error) {
	table := "run_results"
	if q.Domain != "" && q.Status != "" && q.Search == "" && !sqldb.IsPG(s.db) {
		table += " INDEXED BY run_results_cell_status"
	}
	return filter(s.db.NewSelect().TableExpr(table), runID, q).Count(ctx)
}

// countSearch is count for a search the index answers. The index counts
// its matches among the run's ids without reading a row; few of them
// (joinCount or fewer) are counted through their rows, which say whether
// the other filters keep them. Otherwise the results the filters keep are
// counted through their index, and the smaller set of rows is read: the
// matches' rows, for the filters, or the kept rows, each tested by the
// LIKE scan (the index counts its matches only up to one more than the
// kept rows). A search alone reads no row when the run holds every id
// from its first to its last (no other run's results among them, as when
// one run was written at a time): its matches are the total.
//
// The index may not hold the run's newest results yet (searchindex.go):
// those, past its watermark, are counted by the LIKE scan, a walk of the
// table from the watermark that the indexer keeps short, and added.
// indexed is false when the index holds none of the run's results: the
// search is then counted by the LIKE scan alone.
func (s *Store) countSearch(ctx context.Context, runID string, q ResultQuery, info Info, counted bool) (_ int64, _ selectivity, indexed bool, _ error) {
	lo, hi, ok, err := s.idRange(ctx, runID)
	if err != nil || !ok {
		return 0, selectivity{}, true, err
	}
	through, err := s.indexedThrough(ctx)
	if err != nil || through < lo {
		return 0, selectivity{}, false, err
	}
	top := min(hi, through)
	n, sel, whole, err := s.countIndexed(ctx, runID, q, info, counted, lo, top, top == hi)
	if err != nil || whole || top == hi {
		return n, sel, true, err
	}
	tail, err := pendingMatches(s.db.NewSelect().TableExpr(`"run_results"`), runID, q, top, hi).Count(ctx)
	if err != nil {
		return 0, selectivity{}, true, err
	}
	return n + int64(tail), sel, true, nil
}

// countIndexed is countSearch over the run's ids lo to hi, all in the
// index; all says that they are all of the run's ids. whole says that the
// count is of every result of the run (the LIKE scan over all of them),
// not only of those ids.
func (s *Store) countIndexed(ctx context.Context, runID string, q ResultQuery, info Info, counted bool, lo, hi int64, all bool) (_ int64, _ selectivity, whole bool, _ error) {
	matches, err := countMatches(ctx, s.db, q.Search, lo, hi, joinCount+1)
	if err != nil {
		return 0, selectivity{}, false, err
	}
	if matches <= joinCount {
		sel := selectivity{search: isSelective(matches, info)}
		if matches == 0 {
			return 0, sel, false, nil
		}
		n, err := countMatchesKept(ctx, s.db, runID, q, lo, hi)
		return n, sel, false, err
	}
	// The results the other filters keep: from the cells in a counted run.
	var kept int64
	if counted {
		kept, err = s.countCells(ctx, runID, q)
	} else {
		kept, err = filterFields(s.db.NewSelect().Model((*resultRow)(nil)).Where("run_id = ?", runID), q, "").Count(ctx)
	}
	if err != nil {
		return 0, selectivity{}, false, err
	}
	if matches, err = countMatches(ctx, s.db, q.Search, lo, hi, kept+1); err != nil {
		return 0, selectivity{}, false, err
	}
	if matches <= kept {
		sel := selectivity{search: isSelective(matches, info)}
		if all && q.Domain == "" && q.Level == nil && q.Status == "" && kept == hi-lo+1 {
			return matches, sel, false, nil
		}
		n, err := countMatchesKept(ctx, s.db, runID, q, lo, hi)
		return n, sel, false, err
	}
	n, err := filter(s.db.NewSelect().Model((*resultRow)(nil)), runID, q).Count(ctx)
	return n, selectivity{filter: isSelective(kept, info)}, true, err
}

// pendingMatches keeps, of a select of run_results, the run's results
// with ids after through up to hi (past the search index's watermark)
// that q's filters keep, its search as the LIKE scan. + keeps SQLite on
// the table's ids, from the watermark.
func pendingMatches(sel *bun.SelectQuery, runID string, q ResultQuery, through, hi int64) *bun.SelectQuery {
	return filterRest(sel.Where(`"id" > ? AND "id" <= ?`, through, hi).Where(`+"run_id" = ?`, runID), q)
}

// positionOf is the position of a row under a sort.
func positionOf(sort sortSpec, r *resultRow) position {
	switch sort.col {
	case SortScore:
		return position{value: r.Score, id: r.ID}
	case SortDurationMS:
		return position{value: r.DurationMS, id: r.ID}
	}
	return position{value: r.ID, id: r.ID}
}

// QueryResults returns one page of a run's results: those q's filters
// select, in q's order, after q.Cursor. It reads a live run as well as a
// finished one. An unknown run is an error wrapping harness.ErrNotFound;
// an invalid filter, sort, limit or cursor a *harness.ValidationError
// naming it.
func (s *Store) QueryResults(ctx context.Context, runID string, q ResultQuery) (ResultPage, error) {
	sort, err := checkQuery(q)
	if err != nil {
		return ResultPage{}, err
	}
	var from *position
	if q.Cursor != "" {
		p, err := decodeCursor(sort, q.Cursor)
		if err != nil {
			return ResultPage{}, err
		}
		from = &p
	}
	row, err := s.run(ctx, runID)
	if err != nil {
		return ResultPage{}, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	total, selective, err := s.count(ctx, runID, q, row.info(), row.Counted)
	if err != nil {
		return ResultPage{}, err
	}
	// One row more than the page says whether another page follows.
	rows, err := s.page(ctx, runID, q, sort, from, limit+1, selective)
	if err != nil {
		return ResultPage{}, err
	}
	out := ResultPage{Total: total}
	if q.Search != "" {
		pending, err := s.pendingOf(ctx, runID)
		if err != nil {
			return ResultPage{}, err
		}
		out.SearchIndex = &SearchIndexState{Pending: pending}
	}
	if len(rows) > limit {
		rows = rows[:limit]
		out.NextCursor = encodeCursor(sort, positionOf(sort, &rows[limit-1]))
	}
	out.Results = make([]Result, len(rows))
	for i := range rows {
		out.Results[i] = rows[i].result()
	}
	return out, nil
}

// EachResult calls fn with every result of a run that q's filters select,
// in q's order (q.Limit and q.Cursor are ignored), reading a few hundred
// rows at a time so that memory stays flat however large the run. It
// stops at fn's first error and returns it. Errors as QueryResults.
func (s *Store) EachResult(ctx context.Context, runID string, q ResultQuery, fn func(Result) error) error {
	q.Limit, q.Cursor = 0, ""
	sort, err := checkQuery(q)
	if err != nil {
		return err
	}
	row, err := s.run(ctx, runID)
	if err != nil {
		return err
	}
	var selective selectivity
	if p, _ := choosePlan(s.db, q, sort, selectivity{search: true, filter: true}); p == planFilterIndex || p == planSearchIndex {
		if _, selective, err = s.count(ctx, runID, q, row.info(), row.Counted); err != nil {
			return err
		}
	}
	var from *position
	for {
		rows, err := s.page(ctx, runID, q, sort, from, exportPage, selective)
		if err != nil {
			return err
		}
		for i := range rows {
			if err := fn(rows[i].result()); err != nil {
				return err
			}
		}
		if len(rows) < exportPage {
			return nil
		}
		p := positionOf(sort, &rows[len(rows)-1])
		from = &p
	}
}
