package runs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
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
}

type resultRow struct {
	bun.BaseModel    `bun:"table:run_results"`
	ID               int64            `bun:"id,pk,autoincrement"`
	RunID            string           `bun:"run_id,notnull"`
	TestID           string           `bun:"test_id,notnull"`
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
	CreatedAt        string           `bun:"created_at,notnull"`
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
}

// Store keeps runs, results and cells.
type Store struct {
	db *bun.DB
}

// Open creates the tables if needed.
func Open(ctx context.Context, db *bun.DB) (*Store, error) {
	if err := store.CreateTables(ctx, db, (*runRow)(nil), (*resultRow)(nil), (*cellRow)(nil)); err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	if err := store.CreateIndex(ctx, db, "run_results_cell", "run_results", "run_id", "domain", "level", "id"); err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	if err := store.CreateIndex(ctx, db, "runs_seq", "runs", "seq"); err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	return &Store{db: db}, nil
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
	return &runRow{RunID: in.RunID, StartedAt: in.StartedAt, CompletedAt: in.CompletedAt, ModelName: in.ModelName,
		Model: in.Model, Status: in.Status, OverallScore: in.OverallScore, TotalTokens: in.TotalTokens,
		TotalDurationMS: in.TotalDurationMS, TotalTests: in.TotalTests, Domains: in.Domains}
}

func (r *runRow) info() Info {
	d := r.Domains
	if d == nil {
		d = []string{}
	}
	return Info{RunID: r.RunID, StartedAt: r.StartedAt, CompletedAt: r.CompletedAt, ModelName: r.ModelName,
		Model: r.Model, Status: r.Status, OverallScore: r.OverallScore, TotalTokens: r.TotalTokens,
		TotalDurationMS: r.TotalDurationMS, TotalTests: r.TotalTests, Domains: d}
}

// CreateRun records a new run and its cells, all pending.
func (s *Store) CreateRun(ctx context.Context, in Info, cells []CellKey) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		row := toRunRow(in)
		var seq int64
		if err := tx.NewSelect().Model((*runRow)(nil)).ColumnExpr("COALESCE(MAX(seq), 0) + 1").Scan(ctx, &seq); err != nil {
			return err
		}
		row.Seq = seq
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
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
		return nil
	})
}

func toResultRow(r Result) *resultRow {
	return &resultRow{RunID: r.RunID, TestID: r.TestID, Domain: r.Domain, Level: r.Level, Name: r.Name,
		Prompt: r.Prompt, Response: r.Response, Expected: r.Expected, Score: r.Score, Status: r.Status,
		Details: r.Details, DurationMS: r.DurationMS, ModelName: r.ModelName, SystemPrompt: r.SystemPrompt,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, CreatedAt: r.CreatedAt}
}

func (r *resultRow) result() Result {
	d := r.Details
	if d == nil {
		d = map[string]any{}
	}
	return Result{RunID: r.RunID, TestID: r.TestID, Domain: r.Domain, Level: r.Level, Name: r.Name,
		Prompt: r.Prompt, Response: r.Response, Expected: r.Expected, Score: r.Score, Status: r.Status,
		Details: d, DurationMS: r.DurationMS, ModelName: r.ModelName, SystemPrompt: r.SystemPrompt,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, CreatedAt: r.CreatedAt}
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
func (s *Store) SaveBatch(ctx context.Context, results []Result, cells []CellUpdate) error {
	if len(results) == 0 && len(cells) == 0 {
		return nil
	}
	rows := make([]*resultRow, len(results))
	for i, r := range results {
		rows[i] = toResultRow(r)
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for start := 0; start < len(rows); start += 200 {
			chunk := rows[start:min(start+200, len(rows))]
			if _, err := tx.NewInsert().Model(&chunk).Exec(ctx); err != nil {
				return fmt.Errorf("save results: %w", err)
			}
		}
		for _, c := range cells {
			if err := saveCell(ctx, tx, c.RunID, c.Domain, c.Level, c.Cell); err != nil {
				return err
			}
		}
		return nil
	})
}

// SaveCell stores a cell's state.
func (s *Store) SaveCell(ctx context.Context, runID, domain string, level int, c Cell) error {
	return saveCell(ctx, s.db, runID, domain, level, c)
}

func saveCell(ctx context.Context, db bun.IDB, runID, domain string, level int, c Cell) error {
	_, err := db.NewUpdate().Model((*cellRow)(nil)).
		Set("status = ?", c.Status).Set("score = ?", c.Score).Set("duration_ms = ?", c.DurationMS).
		Set("done = ?", c.Done).Set("passed = ?", c.Passed).
		Where("run_id = ? AND domain = ? AND level = ?", runID, domain, level).Exec(ctx)
	if err != nil {
		return fmt.Errorf("save cell %s/%d: %w", domain, level, err)
	}
	return nil
}

// FinishRun records a run's end: status, completion time, totals. Cells
// still pending become skipped.
func (s *Store) FinishRun(ctx context.Context, in Info) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewUpdate().Model((*runRow)(nil)).
			Set("status = ?", in.Status).Set("completed_at = ?", in.CompletedAt).
			Set("overall_score = ?", in.OverallScore).Set("total_tokens = ?", in.TotalTokens).
			Set("total_duration_ms = ?", in.TotalDurationMS).
			Where("run_id = ?", in.RunID).Exec(ctx)
		if err != nil {
			return fmt.Errorf("finish run: %w", err)
		}
		_, err = tx.NewUpdate().Model((*cellRow)(nil)).Set("status = ?", CellSkipped).
			Where("run_id = ? AND status IN (?)", in.RunID, bun.In([]string{CellPending, CellRunning})).Exec(ctx)
		return err
	})
}

// MarkInterrupted turns runs left "running" by a process that died into
// "interrupted", with totals from the results they kept: completed_at is
// the time of the last result (the start when there is none), and
// total_duration_ms the wall time from the start to it. It returns how
// many runs it changed.
func (s *Store) MarkInterrupted(ctx context.Context) (int, error) {
	var ids []string
	if err := s.db.NewSelect().Model((*runRow)(nil)).Column("run_id").Where("status = ?", StatusRunning).Scan(ctx, &ids); err != nil {
		return 0, fmt.Errorf("mark interrupted: %w", err)
	}
	for _, id := range ids {
		info, err := s.Run(ctx, id)
		if err != nil {
			return 0, err
		}
		st, err := s.Stats(ctx, id)
		if err != nil {
			return 0, err
		}
		var tokens int
		var last string
		if err := s.db.NewSelect().Model((*resultRow)(nil)).
			ColumnExpr("COALESCE(SUM(prompt_tokens + completion_tokens), 0)").
			ColumnExpr("COALESCE(MAX(created_at), ?)", info.StartedAt).
			Where("run_id = ?", id).Scan(ctx, &tokens, &last); err != nil {
			return 0, fmt.Errorf("mark interrupted: %w", err)
		}
		info.Status = StatusInterrupted
		if st.TotalTests > 0 {
			avg := st.AvgScore
			info.OverallScore = &avg
		}
		info.TotalTokens, info.CompletedAt, info.TotalDurationMS = tokens, &last, 0
		t0, err0 := time.Parse(harness.TimeLayout, info.StartedAt)
		t1, err1 := time.Parse(harness.TimeLayout, last)
		if err0 == nil && err1 == nil && t1.After(t0) {
			info.TotalDurationMS = t1.Sub(t0).Milliseconds()
		}
		if err := s.FinishRun(ctx, info); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

func notFound(id string) error {
	return fmt.Errorf("run %q: %w", id, harness.ErrNotFound)
}

// Run returns one run's summary.
func (s *Store) Run(ctx context.Context, id string) (Info, error) {
	var row runRow
	err := s.db.NewSelect().Model(&row).Where("run_id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Info{}, notFound(id)
	}
	if err != nil {
		return Info{}, fmt.Errorf("read run %q: %w", id, err)
	}
	return row.info(), nil
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
		m[r.Domain][strconv.Itoa(r.Level)] = Cell{Status: r.Status, Score: r.Score, DurationMS: r.DurationMS,
			Tests: r.Tests, Done: r.Done, Passed: r.Passed}
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

// Stats summarises a run's results.
func (s *Store) Stats(ctx context.Context, id string) (Stats, error) {
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
	for _, r := range rows {
		st.StatusCounts[r.Status] = r.N
		st.TotalTests += r.N
		sum += r.Sum
	}
	if st.TotalTests > 0 {
		st.AvgScore = sum / float64(st.TotalTests)
	}
	return st, nil
}

// Delete removes a run with its results and cells.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*runRow)(nil)).Where("run_id = ?", id).Exec(ctx)
		if err != nil {
			return fmt.Errorf("delete run: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound(id)
		}
		for _, m := range []any{(*resultRow)(nil), (*cellRow)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("run_id = ?", id).Exec(ctx); err != nil {
				return fmt.Errorf("delete run: %w", err)
			}
		}
		return nil
	})
}
