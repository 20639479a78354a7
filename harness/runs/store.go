package runs

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

type runRow struct {
	bun.BaseModel   `bun:"table:runs"`
	RunID           string   `bun:"run_id,pk"`
	Seq             int64    `bun:"seq,notnull"`
	StartedAt       string   `bun:"started_at,notnull"`
	CompletedAt     *string  `bun:"completed_at"`
	ModelName       string   `bun:"model_name,notnull"`
	Model           string   `bun:"model,notnull"`
	Status          string   `bun:"status,notnull"`
	OverallScore    *float64 `bun:"overall_score"`
	TotalTokens     int      `bun:"total_tokens,notnull"`
	TotalDurationMS int64    `bun:"total_duration_ms,notnull"`
	TotalTests      int      `bun:"total_tests,notnull"`
	Domains         []string `bun:"domains,type:text"`
	DoneTests       int      `bun:"done_tests,notnull"`
	Passed          int      `bun:"passed,notnull"`
	Failed          int      `bun:"failed,notnull"`
	Errors          int      `bun:"errors,notnull"`
	Error           string   `bun:"error,notnull"`
	Config          *Config  `bun:"config,type:text,json_use_number"` // json_use_number: a seed in Params keeps all its digits
	DefinitionsHash string   `bun:"definitions_hash,notnull"`
	CacheHits       int      `bun:"cache_hits,notnull"`
	RescoredFrom    string   `bun:"rescored_from,notnull"`
	// Counted: the cells' done, passed, failed and errors are the counts
	// of the run's stored results, at every commit (SaveBatch). True for
	// the runs created since the runs schema's version 11.
	Counted bool `bun:"counted,notnull"`
	// Owner is the lease of the process that created or last resumed the
	// run ("" before leases, or from a store holding none): see Lease.
	Owner string `bun:"owner,notnull"`
	// Resumed holds the times the run was resumed, oldest first; NULL
	// when never.
	Resumed []string `bun:"resumed,type:text"`
	spendColumns
	latencyColumns
}

type resultRow struct {
	bun.BaseModel    `bun:"table:run_results"`
	ID               int64            `bun:"id,pk,autoincrement"`
	RunID            string           `bun:"run_id,notnull"`
	TestID           string           `bun:"test_id,notnull"`
	Repeat           int              `bun:"repeat,notnull"`
	Domain           string           `bun:"domain,notnull"`
	Level            int              `bun:"level,notnull"`
	Name             string           `bun:"name,notnull"`
	Prompt           string           `bun:"prompt,notnull"`
	Response         string           `bun:"response,notnull"`
	Expected         harness.Expected `bun:"expected,type:text"`
	Score            float64          `bun:"score,notnull"`
	Status           string           `bun:"status,notnull"`
	Details          map[string]any   `bun:"details,type:text"`
	DurationMS       int64            `bun:"duration_ms,notnull"`
	ModelName        string           `bun:"model_name,notnull"`
	SystemPrompt     string           `bun:"system_prompt,notnull"`
	PromptTokens     int              `bun:"prompt_tokens,notnull"`
	CompletionTokens int              `bun:"completion_tokens,notnull"`
	CachedTokens     int              `bun:"cached_tokens,notnull"`
	ReasoningTokens  int              `bun:"reasoning_tokens,notnull"`
	CostUSD          *float64         `bun:"cost_usd"`
	JudgeCostUSD     *float64         `bun:"judge_cost_usd"`
	TTFTMS           *int64           `bun:"ttft_ms"`
	OutputTokensPerS *float64         `bun:"output_tokens_per_s"`
	CreatedAt        string           `bun:"created_at,notnull"`
	Transcript       *string          `bun:"transcript"` // compact JSON (transcript.go); NULL before transcripts were recorded
	Calls            *string          `bun:"calls"`      // JSON; NULL before calls were recorded
}

type cellRow struct {
	bun.BaseModel `bun:"table:run_cells"`
	RunID         string   `bun:"run_id,pk"`
	Domain        string   `bun:"domain,pk"`
	Level         int      `bun:"level,pk"`
	Position      int      `bun:"position,notnull"`
	Status        string   `bun:"status,notnull"`
	Score         *float64 `bun:"score"`
	DurationMS    *int64   `bun:"duration_ms"`
	Tests         int      `bun:"tests,notnull"`
	Done          int      `bun:"done,notnull"`
	Passed        int      `bun:"passed,notnull"`
	Failed        int      `bun:"failed,notnull"`
	Errors        int      `bun:"errors,notnull"`
	StdErr        *float64 `bun:"stderr"`
	CI95Low       *float64 `bun:"ci95_low"`
	CI95High      *float64 `bun:"ci95_high"`
	// The sums of the cell's retrieval figures (RetrievalTally); 0 tests
	// for a cell that measured none.
	RetrievalTests  int     `bun:"retrieval_tests,notnull"`
	RetrievalRecall float64 `bun:"retrieval_recall,notnull"`
	RetrievalHits   int     `bun:"retrieval_hits,notnull"`
	// ScoreSum is the sum of the scores of the cell's passed and failed
	// results, kept in step with them in a counted run (0 in others).
	ScoreSum float64 `bun:"score_sum,notnull"`
	spendColumns
	latencyColumns
}

type definitionsRow struct {
	bun.BaseModel `bun:"table:run_definitions"`
	Hash          string `bun:"hash,pk"`
	Data          []byte `bun:"data,notnull"`
	Size          int    `bun:"size,notnull"`
	CreatedAt     string `bun:"created_at,notnull"`
	// Tests is nil for a set stored whole (its tests inside Data), the
	// number of tests for one whose tests are rows of
	// run_definition_tests (Data then holds the rest).
	Tests *int `bun:"tests"`
}

// Store keeps runs, results and cells.
type Store struct {
	db    *bun.DB
	cache cacheLookup
	// lease is the process's lease (Lease), nil when it holds none.
	lease atomic.Pointer[Lease]
}

// Open migrates the runs tables to the newest schema and returns the
// store.
func Open(ctx context.Context, db *store.DB) (*Store, error) {
	b := sqldb.Bun(db)
	if err := sqldb.Migrate(ctx, b, "runs", migrations); err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	return &Store{db: b}, nil
}

// CellKey names a cell and how many tests it holds.
type CellKey struct {
	Domain string
	Level  int
	Tests  int
}

// Now returns the current time in the resource format (UTC).
func Now() string { return time.Now().UTC().Format(harness.TimeLayout) }

func toRunRow(in Info) *runRow {
	row := &runRow{RunID: in.RunID, StartedAt: in.StartedAt, CompletedAt: in.CompletedAt, ModelName: in.ModelName,
		Model: in.Model, Status: in.Status, OverallScore: in.OverallScore, TotalTokens: in.TotalTokens,
		TotalDurationMS: in.TotalDurationMS, TotalTests: in.TotalTests, Domains: in.Domains,
		DoneTests: in.DoneTests, Passed: in.Passed, Failed: in.Failed, Errors: in.Errors, Error: in.Error,
		Config: in.Config, CacheHits: in.CacheHits, RescoredFrom: in.RescoredFrom}
	if in.Config != nil {
		row.DefinitionsHash = in.Config.DefinitionsHash
	}
	return row
}

func (r *runRow) info() Info {
	d := r.Domains
	if d == nil {
		d = []string{}
	}
	in := Info{RunID: r.RunID, StartedAt: r.StartedAt, CompletedAt: r.CompletedAt, ModelName: r.ModelName,
		Model: r.Model, Status: r.Status, OverallScore: r.OverallScore, TotalTokens: r.TotalTokens,
		TotalDurationMS: r.TotalDurationMS, TotalTests: r.TotalTests, Domains: d,
		DoneTests: r.DoneTests, Passed: r.Passed, Failed: r.Failed, Errors: r.Errors, Error: r.Error,
		Config: r.Config, CacheHits: r.CacheHits, RescoredFrom: r.RescoredFrom,
		Resumed: Resumed{Count: len(r.Resumed), At: r.Resumed}}
	sp := r.spend()
	in.CostUSD, in.JudgeCostUSD = sp.Costs()
	in.Tokens = sp.Tokens
	in.LatencyP50MS, in.LatencyP95MS, in.TTFTP50MS = r.LatencyP50MS, r.LatencyP95MS, r.TTFTP50MS
	if in.Config != nil && in.Config.Params == nil {
		in.Config.Params = map[string]any{}
	}
	in.Complete = IsComplete(in)
	return in
}

// IsComplete reports whether a run's numbers are the whole story: it
// completed, every test finished, and none ended in error.
func IsComplete(in Info) bool {
	return in.Status == StatusCompleted && in.DoneTests == in.TotalTests && in.Errors == 0
}

// CreateRun records a new run and its cells, all pending. The run is
// counted: from now on its cells' done, passed, failed and errors move
// with its stored results, in the same transactions (SaveBatch), and
// every result it takes must belong to one of these cells.
func (s *Store) CreateRun(ctx context.Context, in Info, cells []CellKey) error {
	return s.CreateRunThen(ctx, in, cells, nil)
}

// CreateRunThen records a new run and its cells as CreateRun does, and
// calls then, when not nil, in the same transaction: what then writes
// (the run's queued jobs) is committed with the run or not at all.
func (s *Store) CreateRunThen(ctx context.Context, in Info, cells []CellKey, then func(ctx context.Context, tx bun.Tx) error) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// Two runs created at once must not take the same number.
		if err := sqldb.LockTx(ctx, tx, "runs.seq"); err != nil {
			return err
		}
		row := toRunRow(in)
		row.Counted = true
		row.Owner = s.owner()
		var seq int64
		if err := tx.NewSelect().Model((*runRow)(nil)).ColumnExpr("COALESCE(MAX(seq), 0) + 1").Scan(ctx, &seq); err != nil {
			return err
		}
		row.Seq = seq
		if err := sqldb.Insert(ctx, tx, []*runRow{row}); err != nil {
			return fmt.Errorf("create run: %w", err)
		}
		rows := make([]*cellRow, len(cells))
		for i, c := range cells {
			rows[i] = &cellRow{RunID: in.RunID, Domain: c.Domain, Level: c.Level, Position: i, Status: CellPending, Tests: c.Tests}
		}
		if len(rows) > 0 {
			if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
				return fmt.Errorf("create run cells: %w", err)
			}
		}
		if then != nil {
			return then(ctx, tx)
		}
		return nil
	})
}

func toResultRow(r Result) *resultRow {
	return &resultRow{RunID: r.RunID, TestID: r.TestID, Repeat: r.Repeat, Domain: r.Domain, Level: r.Level, Name: r.Name,
		Prompt: r.Prompt, Response: r.Response, Expected: r.Expected, Score: r.Score, Status: r.Status,
		Details: r.Details, DurationMS: r.DurationMS, ModelName: r.ModelName, SystemPrompt: r.SystemPrompt,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, CreatedAt: r.CreatedAt,
		CachedTokens: r.CachedTokens, ReasoningTokens: r.ReasoningTokens, CostUSD: r.CostUSD, JudgeCostUSD: r.JudgeCostUSD,
		TTFTMS: r.TTFTMS, OutputTokensPerS: r.OutputTokensPerS,
		Transcript: encodeTranscript(&r), Calls: encodeCalls(r.Calls)}
}

func (r *resultRow) result() Result {
	d := r.Details
	if d == nil {
		d = map[string]any{}
	}
	out := Result{RunID: r.RunID, TestID: r.TestID, Repeat: r.Repeat, Domain: r.Domain, Level: r.Level, Name: r.Name,
		Prompt: r.Prompt, Response: r.Response, Expected: r.Expected, Score: r.Score, Status: r.Status,
		Details: d, DurationMS: r.DurationMS, ModelName: r.ModelName, SystemPrompt: r.SystemPrompt,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, CreatedAt: r.CreatedAt,
		CachedTokens: r.CachedTokens, ReasoningTokens: r.ReasoningTokens, CostUSD: r.CostUSD, JudgeCostUSD: r.JudgeCostUSD,
		TTFTMS: r.TTFTMS, OutputTokensPerS: r.OutputTokensPerS}
	out.Transcript, out.Calls = decodeTranscript(&out, r.Transcript), decodeCalls(r.Calls)
	if !utf8.ValidString(r.Response) {
		// JSON can carry only UTF-8: the exact bytes go alongside.
		out.ResponseBase64 = base64.StdEncoding.EncodeToString([]byte(r.Response))
	}
	return out
}

// SaveResults stores finished results, in one transaction.
func (s *Store) SaveResults(ctx context.Context, results []Result) error {
	return s.SaveBatch(ctx, results, nil)
}

// CellUpdate is the new state of one cell of a run.
type CellUpdate struct {
	RunID  string
	Domain string
	Level  int
	Cell   Cell
}

// SaveBatch stores finished results and the states of the cells they
// changed, in one transaction: a single commit per batch, rather than one
// per result and one per cell, is what lets the engine keep up with a fast
// model.
//
// In a counted run (one made by CreateRun), the cells' done, passed,
// failed and errors are the store's: each result stored moves its cell's
// by one, in the same transaction, and the counts a CellUpdate carries are
// not written (its status, score, duration, interval and retrieval
// figures are). A result that no counter can say (one of a cell the run
// was not created with, or of a status other than passed, failed and
// error: the engine stores none) makes its run uncounted in the same
// transaction: its counts are then read from its results, as a run's
// stored by an older version are. In such a run the cells' counts are
// written as the updates give them, as they were then.
func (s *Store) SaveBatch(ctx context.Context, results []Result, cells []CellUpdate) error {
	if len(results) == 0 && len(cells) == 0 {
		return nil
	}
	rows := make([]*resultRow, len(results))
	for i, r := range results {
		rows[i] = toResultRow(r)
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		counted, err := countedRuns(ctx, tx, results, cells)
		if err != nil {
			return err
		}
		moves, odd := cellMoves(results, counted)
		if err := sqldb.Insert(ctx, tx, rows); err != nil {
			return fmt.Errorf("save results: %w", err)
		}
		missing, err := moveCells(ctx, tx, moves)
		if err != nil {
			return err
		}
		if err := uncount(ctx, tx, append(odd, missing...), counted); err != nil {
			return err
		}
		if err := moveRunSpend(ctx, tx, results); err != nil {
			return err
		}
		for _, c := range cells {
			if err := saveCell(ctx, tx, c.RunID, c.Domain, c.Level, c.Cell, counted[c.RunID]); err != nil {
				return err
			}
		}
		return nil
	})
}

// countedRuns returns which of the runs of results and cells are counted.
func countedRuns(ctx context.Context, tx bun.Tx, results []Result, cells []CellUpdate) (map[string]bool, error) {
	var ids []string
	for _, r := range results {
		if !slices.Contains(ids, r.RunID) {
			ids = append(ids, r.RunID)
		}
	}
	for _, c := range cells {
		if !slices.Contains(ids, c.RunID) {
			ids = append(ids, c.RunID)
		}
	}
	var yes []string
	if len(ids) > 0 {
		if err := tx.NewSelect().Model((*runRow)(nil)).Column("run_id").Where("run_id IN (?) AND counted", bun.List(ids)).
			Scan(ctx, &yes); err != nil {
			return nil, fmt.Errorf("read runs: %w", err)
		}
	}
	out := make(map[string]bool, len(yes))
	for _, id := range yes {
		out[id] = true
	}
	return out, nil
}

// cellID names a cell of a run.
type cellID struct {
	run, domain string
	level       int
}

// tally is how the counters of a cell (or a run) move with results: done,
// passed, failed, errors, and the scored results' score sum.
type tally struct {
	done, passed, failed, errs int
	scoreSum                   float64
	spend                      Spend
}

// knownStatus reports whether a counter says results of status: passed,
// failed and error.
func knownStatus(status string) bool {
	return status == TestPassed || status == TestFailed || status == TestError
}

// add counts a result. A status no counter says counts as an error, and
// add returns false: its run's counters no longer say its results by
// status.
func (t *tally) add(r *Result) bool {
	t.done++
	t.spend.Add(SpendOf(r))
	switch r.Status {
	case TestPassed:
		t.passed++
		t.scoreSum += r.Score
	case TestFailed:
		t.failed++
		t.scoreSum += r.Score
	default:
		t.errs++
	}
	return knownStatus(r.Status)
}

// cellMove is how a cell's counters move with the results stored.
type cellMove struct {
	cellID
	tally
}

// cellMoves sums the results of counted runs by cell, in key order (two
// transactions moving the same cells lock them in the same order). It
// also returns the runs of results whose status no counter says.
func cellMoves(results []Result, counted map[string]bool) (moves []cellMove, odd []string) {
	at := map[cellID]int{}
	for j := range results {
		r := &results[j]
		if !counted[r.RunID] {
			continue
		}
		k := cellID{r.RunID, r.Domain, r.Level}
		i, ok := at[k]
		if !ok {
			i = len(moves)
			at[k] = i
			moves = append(moves, cellMove{cellID: k})
		}
		// A result no counter says is counted in no counter: its run
		// is uncounted.
		if !knownStatus(r.Status) {
			odd = append(odd, r.RunID)
			continue
		}
		moves[i].add(r)
	}
	slices.SortFunc(moves, func(a, b cellMove) int {
		return cmp.Or(cmp.Compare(a.run, b.run), cmp.Compare(a.domain, b.domain), cmp.Compare(a.level, b.level))
	})
	return moves, odd
}

// moveCells adds the moves to the cells' counters. It returns the runs of
// moves whose cell the run does not have: their results are counted in no
// cell.
func moveCells(ctx context.Context, tx bun.Tx, moves []cellMove) (missing []string, err error) {
	for _, m := range moves {
		res, err := tx.NewUpdate().Model((*cellRow)(nil)).
			Set("done = done + ?", m.done).Set("passed = passed + ?", m.passed).
			Set("failed = failed + ?", m.failed).Set("errors = errors + ?", m.errs).Set("score_sum = score_sum + ?", m.scoreSum).
			Apply(func(q *bun.UpdateQuery) *bun.UpdateQuery { return moveSpend(q, m.spend) }).
			Where("run_id = ? AND domain = ? AND level = ?", m.run, m.domain, m.level).Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("count results in cell %s/%d: %w", m.domain, m.level, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("count results in cell %s/%d: %w", m.domain, m.level, err)
		} else if n == 0 {
			missing = append(missing, m.run)
		}
	}
	return missing, nil
}

// uncount makes runs no longer counted: their cells' counters no longer
// say all their results. counted is updated to match.
func uncount(ctx context.Context, tx bun.Tx, ids []string, counted map[string]bool) error {
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if _, err := tx.NewUpdate().Model((*runRow)(nil)).Set("counted = ?", false).Where("run_id IN (?)", bun.List(ids)).
		Exec(ctx); err != nil {
		return fmt.Errorf("save results: %w", err)
	}
	for _, id := range ids {
		delete(counted, id)
	}
	return nil
}

// SaveCell stores a cell's state; in a counted run, all but its counts
// (SaveBatch).
func (s *Store) SaveCell(ctx context.Context, runID, domain string, level int, c Cell) error {
	return s.SaveCells(ctx, []CellUpdate{{RunID: runID, Domain: domain, Level: level, Cell: c}})
}

// saveCell writes a cell's state, and its counts unless its run is
// counted (SaveBatch).
func saveCell(ctx context.Context, db bun.IDB, runID, domain string, level int, c Cell, counted bool) error {
	var low, high *float64
	t := TallyOf(c.Retrieval)
	if c.CI95 != nil {
		low, high = &c.CI95.Low, &c.CI95.High
	}
	up := db.NewUpdate().Model((*cellRow)(nil)).
		Set("status = ?", c.Status).Set("score = ?", c.Score).Set("duration_ms = ?", c.DurationMS).
		Set("stderr = ?", c.StdErr).Set("ci95_low = ?", low).Set("ci95_high = ?", high).
		Set("retrieval_tests = ?", t.Tests).Set("retrieval_recall = ?", t.RecallSum).Set("retrieval_hits = ?", t.Hits).
		Set("latency_p50_ms = ?", c.LatencyP50MS).Set("latency_p95_ms = ?", c.LatencyP95MS).Set("ttft_p50_ms = ?", c.TTFTP50MS)
	if !counted {
		up = up.Set("done = ?", c.Done).Set("passed = ?", c.Passed).Set("failed = ?", c.Failed).Set("errors = ?", c.Errors)
	}
	_, err := up.Where("run_id = ? AND domain = ? AND level = ?", runID, domain, level).Exec(ctx)
	if err != nil {
		return fmt.Errorf("save cell %s/%d: %w", domain, level, err)
	}
	return nil
}

// FinishRun records a run's end: status, completion time, counts, score,
// error, and its latency (Info.LatencyP50MS…) measured over its results,
// which it returns. Cells still pending or running are closed: partial
// when some of their tests finished, skipped when none did.
func (s *Store) FinishRun(ctx context.Context, in Info) (Latency, error) {
	var lat Latency
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if lat, err = runLatency(ctx, tx, in.RunID); err != nil {
			return err
		}
		_, err = tx.NewUpdate().Model((*runRow)(nil)).
			Set("latency_p50_ms = ?", lat.P50MS).Set("latency_p95_ms = ?", lat.P95MS).Set("ttft_p50_ms = ?", lat.TTFTP50MS).
			Set("status = ?", in.Status).Set("completed_at = ?", in.CompletedAt).
			Set("overall_score = ?", in.OverallScore).Set("total_tokens = ?", in.TotalTokens).
			Set("total_duration_ms = ?", in.TotalDurationMS).
			Set("done_tests = ?", in.DoneTests).Set("passed = ?", in.Passed).Set("failed = ?", in.Failed).
			Set("errors = ?", in.Errors).Set("error = ?", cleanText(in.Error)).
			Set("cache_hits = ?", in.CacheHits).
			Where("run_id = ?", in.RunID).Exec(ctx)
		if err != nil {
			return fmt.Errorf("finish run: %w", err)
		}
		_, err = tx.NewUpdate().Model((*cellRow)(nil)).
			Set("status = CASE WHEN done > 0 THEN ? ELSE ? END", CellPartial, CellSkipped).
			Where("run_id = ? AND status IN (?)", in.RunID, bun.List([]string{CellPending, CellRunning})).Exec(ctx)
		return err
	})
	if err != nil {
		return Latency{}, err
	}
	return lat, nil
}

// MarkInterrupted turns runs left "running" by a process that died into
// "interrupted" (a run whose owner's lease is alive is left as it is; one
// with no owner counts as left by a dead process: see Lease), with counts and totals from the results they kept:
// completed_at is the time of the last result (the start when there is
// none), and total_duration_ms the wall time from the start to it. Cells
// the run was working on become partial, those it never reached skipped.
// It returns how many runs it changed.
func (s *Store) MarkInterrupted(ctx context.Context) (int, error) {
	ids, err := s.MarkInterruptedRuns(ctx)
	return len(ids), err
}

// MarkInterruptedRuns is MarkInterrupted returning the ids of the runs it
// changed (those it changed before an error, with the error).
func (s *Store) MarkInterruptedRuns(ctx context.Context) ([]string, error) {
	var rows []runRow
	if err := s.db.NewSelect().Model(&rows).Column("run_id", "owner").Where(leftRunning, StatusRunning, StatusInterrupted).
		Scan(ctx); err != nil {
		return nil, fmt.Errorf("mark interrupted: %w", err)
	}
	live, err := s.liveLeases(ctx)
	if err != nil {
		return nil, fmt.Errorf("mark interrupted: %w", err)
	}
	var changed []string
	for _, row := range rows {
		if _, ok := live[row.Owner]; ok && row.Owner != "" {
			continue // its process is alive: the run is running
		}
		id := row.RunID
		ok, err := s.markInterrupted(ctx, id, row.Owner)
		if err != nil {
			return changed, err
		}
		if ok {
			changed = append(changed, id)
		}
	}
	if err := s.removeDeadLeases(ctx, live); err != nil {
		return changed, fmt.Errorf("mark interrupted: %w", err)
	}
	return changed, nil
}

// leftRunning selects the runs MarkInterrupted closes: running, or marked
// interrupted by a MarkInterrupted that ended before recording the rest.
const leftRunning = "status IN (?, ?) AND completed_at IS NULL"

// markInterrupted marks one run interrupted (MarkInterrupted); false when
// it was no longer running.
func (s *Store) markInterrupted(ctx context.Context, id, owner string) (bool, error) {
	// The run's intake of queued results ends first (RecordResult takes
	// none once the run is not running): the recount then sees every
	// result the cells will ever hold, and no worker moves a counter
	// behind it.
	up, err := s.db.NewUpdate().Model((*runRow)(nil)).Set("status = ?", StatusInterrupted).
		Where("run_id = ? AND owner = ?", id, owner).Where(leftRunning, StatusRunning, StatusInterrupted).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("mark interrupted: %w", err)
	}
	if n, _ := up.RowsAffected(); n == 0 {
		return false, nil
	}
	return true, s.closeInterrupted(ctx, id, owner)
}

// closeInterrupted records the end of a run markInterrupted fenced: its
// cells recounted from its results, its counts, totals and error (naming
// the process that owned it, when its lease is known).
func (s *Store) closeInterrupted(ctx context.Context, id, owner string) error {
	if err := recountCounters(ctx, s.db, id); err != nil {
		return fmt.Errorf("mark interrupted: %w", err)
	}
	info, err := s.Run(ctx, id)
	if err != nil {
		return err
	}
	st, err := s.Stats(ctx, id)
	if err != nil {
		return err
	}
	var tokens int
	var last string
	if err := s.db.NewSelect().Model((*resultRow)(nil)).
		ColumnExpr("COALESCE(SUM(prompt_tokens + completion_tokens), 0)").
		ColumnExpr("COALESCE(MAX(created_at), ?)", info.StartedAt).
		Where("run_id = ?", id).Scan(ctx, &tokens, &last); err != nil {
		return fmt.Errorf("mark interrupted: %w", err)
	}
	info.Status = StatusInterrupted
	info.Passed, info.Failed, info.Errors = st.StatusCounts[TestPassed], st.StatusCounts[TestFailed], st.StatusCounts[TestError]
	info.DoneTests = st.TotalTests
	info.OverallScore = nil
	if info.Passed+info.Failed > 0 {
		avg := st.AvgScore
		info.OverallScore = &avg
	}
	if info.Error == "" {
		info.Error = "the process running it ended before the run finished"
		var p processRow
		if owner != "" && s.db.NewSelect().Model(&p).Where("id = ?", owner).Scan(ctx) == nil {
			info.Error = "the process running it, " + p.process().String() + ", ended before the run finished"
		}
	}
	info.TotalTokens, info.CompletedAt, info.TotalDurationMS = tokens, &last, 0
	t0, err0 := time.Parse(harness.TimeLayout, info.StartedAt)
	t1, err1 := time.Parse(harness.TimeLayout, last)
	if err0 == nil && err1 == nil && t1.After(t0) {
		info.TotalDurationMS = t1.Sub(t0).Milliseconds()
	}
	_, err = s.FinishRun(ctx, info)
	return err
}

func notFound(id string) error {
	return fmt.Errorf("run %q: %w", id, harness.ErrNotFound)
}

// Run returns one run's summary.
func (s *Store) Run(ctx context.Context, id string) (Info, error) {
	row, err := s.run(ctx, id)
	if err != nil {
		return Info{}, err
	}
	return row.info(), nil
}

// run reads one run's row.
func (s *Store) run(ctx context.Context, id string) (*runRow, error) {
	var row runRow
	err := s.db.NewSelect().Model(&row).Where("run_id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %q: %w", id, err)
	}
	return &row, nil
}

// Last returns the most recent run, or an error wrapping
// harness.ErrNotFound when there is none.
func (s *Store) Last(ctx context.Context) (Info, error) {
	var row runRow
	err := s.db.NewSelect().Model(&row).Order("seq DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Info{}, fmt.Errorf("no run yet: %w", harness.ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("read last run: %w", err)
	}
	return row.info(), nil
}

// List returns runs newest first, and how many there are in all.
func (s *Store) List(ctx context.Context, limit, offset int) ([]Info, int, error) {
	var rows []runRow
	total, err := s.db.NewSelect().Model(&rows).Order("seq DESC").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list runs: %w", err)
	}
	out := make([]Info, len(rows))
	for i := range rows {
		out[i] = rows[i].info()
	}
	return out, int(total), nil
}

// Matrix is a run's domain × level matrix; level keys are decimal strings.
type Matrix map[string]map[string]Cell

// Matrix returns a run's matrix.
func (s *Store) Matrix(ctx context.Context, id string) (Matrix, error) {
	if _, err := s.Run(ctx, id); err != nil {
		return nil, err
	}
	var rows []cellRow
	if err := s.db.NewSelect().Model(&rows).Where("run_id = ?", id).Order("position").Scan(ctx); err != nil {
		return nil, fmt.Errorf("read matrix of %q: %w", id, err)
	}
	m := Matrix{}
	for _, r := range rows {
		if m[r.Domain] == nil {
			m[r.Domain] = map[string]Cell{}
		}
		c := Cell{Status: r.Status, Score: r.Score, DurationMS: r.DurationMS,
			Tests: r.Tests, Done: r.Done, Passed: r.Passed, Failed: r.Failed, Errors: r.Errors, StdErr: r.StdErr}
		if r.CI95Low != nil && r.CI95High != nil {
			c.CI95 = &stats.Interval{Low: *r.CI95Low, High: *r.CI95High}
		}
		c.Retrieval = RetrievalTally{Tests: r.RetrievalTests, RecallSum: r.RetrievalRecall, Hits: r.RetrievalHits}.Cell()
		sp := r.spend()
		c.CostUSD, c.JudgeCostUSD = sp.Costs()
		c.Tokens = sp.Tokens
		c.LatencyP50MS, c.LatencyP95MS, c.TTFTP50MS = r.LatencyP50MS, r.LatencyP95MS, r.TTFTP50MS
		m[r.Domain][strconv.Itoa(r.Level)] = c
	}
	return m, nil
}

// CellResults returns the results of one cell of a run, in the order they
// finished. A cell the run did not cover is an error wrapping
// harness.ErrNotFound; a cell it covered but did not reach (a stopped
// run) has no results.
func (s *Store) CellResults(ctx context.Context, id, domain string, level int) ([]Result, error) {
	if _, err := s.Run(ctx, id); err != nil {
		return nil, err
	}
	out, err := s.results(ctx, s.db.NewSelect().Where("run_id = ? AND domain = ? AND level = ?", id, domain, level))
	if err != nil || len(out) > 0 {
		return out, err
	}
	n, err := s.db.NewSelect().Model((*cellRow)(nil)).Where("run_id = ? AND domain = ? AND level = ?", id, domain, level).Count(ctx)
	if err != nil {
		return nil, fmt.Errorf("read cell %s/%d of %q: %w", domain, level, id, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("run %q has no cell %s/%d: %w", id, domain, level, harness.ErrNotFound)
	}
	return out, nil
}

// Results returns every result of a run, by cell and finishing order.
func (s *Store) Results(ctx context.Context, id string) ([]Result, error) {
	if _, err := s.Run(ctx, id); err != nil {
		return nil, err
	}
	return s.results(ctx, s.db.NewSelect().Where("run_id = ?", id))
}

func (s *Store) results(ctx context.Context, q *bun.SelectQuery) ([]Result, error) {
	var rows []resultRow
	if err := q.Model(&rows).Order("domain", "level", "id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	out := make([]Result, len(rows))
	for i := range rows {
		out[i] = rows[i].result()
	}
	return out, nil
}

// Stats summarises a run's results; the average is over the scored
// results (passed and failed), errors left out.
func (s *Store) Stats(ctx context.Context, id string) (Stats, error) {
	var run runRow
	if err := s.db.NewSelect().Model(&run).Column("counted").Where("run_id = ?", id).Scan(ctx); err == nil && run.Counted {
		return s.countedStats(ctx, id)
	} else if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Stats{}, fmt.Errorf("run stats: %w", err)
	}
	var rows []struct {
		Status string  `bun:"status"`
		N      int     `bun:"n"`
		Sum    float64 `bun:"total"`
	}
	err := s.db.NewSelect().Model((*resultRow)(nil)).Column("status").ColumnExpr("COUNT(*) AS n").
		ColumnExpr("SUM(score) AS total").Where("run_id = ?", id).Group("status").Scan(ctx, &rows)
	if err != nil {
		return Stats{}, fmt.Errorf("run stats: %w", err)
	}
	st := Stats{StatusCounts: map[string]int{}}
	var sum float64
	var scored int
	for _, r := range rows {
		st.StatusCounts[r.Status] = r.N
		st.TotalTests += r.N
		if r.Status != TestError {
			sum += r.Sum
			scored += r.N
		}
	}
	if scored > 0 {
		st.AvgScore = sum / float64(scored)
	}
	return st, nil
}

// countedStats is Stats for a counted run: sums over its cells, whose
// counters are its results' (see SaveBatch), instead of a read of every
// result. The statuses with no result are left out, as a count of the
// results leaves them out.
func (s *Store) countedStats(ctx context.Context, id string) (Stats, error) {
	var sum struct {
		Passed   int     `bun:"passed"`
		Failed   int     `bun:"failed"`
		Errors   int     `bun:"errors"`
		ScoreSum float64 `bun:"score_sum"`
	}
	err := s.db.NewSelect().Model((*cellRow)(nil)).ColumnExpr("COALESCE(SUM(passed), 0) AS passed").
		ColumnExpr("COALESCE(SUM(failed), 0) AS failed").ColumnExpr("COALESCE(SUM(errors), 0) AS errors").
		ColumnExpr("COALESCE(SUM(score_sum), 0.0) AS score_sum").Where("run_id = ?", id).Scan(ctx, &sum)
	if err != nil {
		return Stats{}, fmt.Errorf("run stats: %w", err)
	}
	st := Stats{StatusCounts: map[string]int{}, TotalTests: sum.Passed + sum.Failed + sum.Errors}
	for status, n := range map[string]int{TestPassed: sum.Passed, TestFailed: sum.Failed, TestError: sum.Errors} {
		if n > 0 {
			st.StatusCounts[status] = n
		}
	}
	if scored := sum.Passed + sum.Failed; scored > 0 {
		st.AvgScore = sum.ScoreSum / float64(scored)
	}
	return st, nil
}

// Delete removes a run with its results and cells, and its definitions
// snapshot when no other run shares it.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var hash string
		err := tx.NewSelect().Model((*runRow)(nil)).Column("definitions_hash").Where("run_id = ?", id).Scan(ctx, &hash)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return fmt.Errorf("delete run: %w", err)
		}
		for _, m := range []any{(*runRow)(nil), (*resultRow)(nil), (*cellRow)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("run_id = ?", id).Exec(ctx); err != nil {
				return fmt.Errorf("delete run: %w", err)
			}
		}
		if hash != "" {
			for _, m := range []any{(*definitionsRow)(nil), (*definitionTestRow)(nil)} {
				_, err := tx.NewDelete().Model(m).Where("hash = ?", hash).
					Where("NOT EXISTS (SELECT 1 FROM runs WHERE definitions_hash = ?)", hash).Exec(ctx)
				if err != nil {
					return fmt.Errorf("delete run: %w", err)
				}
			}
		}
		return nil
	})
}

// SaveResult stores one result alone, in its own transaction (with its
// cell's counters in a counted run, as SaveBatch).
func (s *Store) SaveResult(ctx context.Context, r Result) error {
	if err := s.SaveBatch(ctx, []Result{r}, nil); err != nil {
		return fmt.Errorf("save result %s: %w", r.TestID, err)
	}
	return nil
}

// SaveCells stores the states of cells, in one transaction; in a counted
// run, all but their counts (SaveBatch).
func (s *Store) SaveCells(ctx context.Context, cells []CellUpdate) error {
	if len(cells) == 0 {
		return nil
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		counted, err := countedRuns(ctx, tx, nil, cells)
		if err != nil {
			return err
		}
		for _, c := range cells {
			if err := saveCell(ctx, tx, c.RunID, c.Domain, c.Level, c.Cell, counted[c.RunID]); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReopenRun prepares a finished run to be resumed: it deletes the results
// that ended in error, recounts the run's and its cells' counts from the
// results kept, and marks the run running again (completed_at and error
// cleared). The run is counted from then on (its cells' counts are its
// results', see SaveBatch) when every result it kept belongs to one of
// its cells with a status of passed or failed: so is a run stored by an
// older version once resumed. It returns the reopened run's summary.
func (s *Store) ReopenRun(ctx context.Context, runID string) (Info, error) {
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*resultRow)(nil)).Where("run_id = ? AND status = ?", runID, TestError).Exec(ctx); err != nil {
			return err
		}
		if err := recountCounters(ctx, tx, runID); err != nil {
			return err
		}
		// The recount made the cells' counts the results'; they stay so
		// unless a result has no cell to be counted in (or an unknown
		// status), which only an older version could have stored.
		// The time of this resume joins the run's list (run_info.resumed).
		var row runRow
		if err := tx.NewSelect().Model(&row).Column("resumed").Where("run_id = ?", runID).Scan(ctx); err != nil {
			return err
		}
		resumed, err := json.Marshal(append(row.Resumed, Now()))
		if err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model((*runRow)(nil)).Set("status = ?", StatusRunning).
			Set("completed_at = NULL").Set("error = ''").Set("owner = ?", s.owner()).Set("resumed = ?", string(resumed)).
			Set("latency_p50_ms = NULL").Set("latency_p95_ms = NULL").Set("ttft_p50_ms = NULL").
			Set(`counted = NOT EXISTS (SELECT 1 FROM run_results r WHERE r.run_id = ?
				AND (r.status NOT IN (?, ?) OR NOT EXISTS (SELECT 1 FROM run_cells c
					WHERE c.run_id = r.run_id AND c.domain = r.domain AND c.level = r.level)))`, runID, TestPassed, TestFailed).
			Where("run_id = ?", runID).Exec(ctx); err != nil {
			return err
		}
		if err := recountRuns(ctx, tx, runID); err != nil {
			return err
		}
		_, err = tx.NewUpdate().Model((*cellRow)(nil)).Set("status = ?", CellPending).
			Where("run_id = ? AND done < tests", runID).Exec(ctx)
		return err
	})
	if err != nil {
		return Info{}, fmt.Errorf("reopen run %q: %w", runID, err)
	}
	return s.Run(ctx, runID)
}

// cleanText makes a message safe to write as an SQL literal: NUL and
// invalid UTF-8 become U+FFFD.
func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
