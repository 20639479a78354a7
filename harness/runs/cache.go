package runs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// cacheRow is one stored model answer of the response cache. The content
// is stored as bytes, so that an answer holding NUL or invalid UTF-8
// comes back exactly.
type cacheRow struct {
	bun.BaseModel    `bun:"table:response_cache"`
	Key              string             `bun:"key,pk"`
	Content          []byte             `bun:"content,notnull"`
	ToolCalls        []harness.ToolCall `bun:"tool_calls,type:text"`
	Model            string             `bun:"model,notnull"`
	FinishReason     string             `bun:"finish_reason,notnull"`
	PromptTokens     int                `bun:"prompt_tokens,notnull"`
	CompletionTokens int                `bun:"completion_tokens,notnull"`
	TotalTokens      int                `bun:"total_tokens,notnull"`
	CreatedAt        string             `bun:"created_at,notnull"`
}

// CacheEntry is one model answer to store in the response cache under
// the key of the request that got it.
type CacheEntry struct {
	Key      string
	Response harness.ChatResponse
}

// cacheLookup is the prepared statement that reads one cached answer:
// preparing it for every request cost more than running it.
// A statement that failed to prepare is prepared again next time.
type cacheLookup struct {
	mu   sync.Mutex
	stmt *sql.Stmt
}

func (s *Store) cacheStmt(ctx context.Context) (*sql.Stmt, error) {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	if s.cache.stmt != nil {
		return s.cache.stmt, nil
	}
	q := `SELECT "content", "tool_calls", "model", "finish_reason", "prompt_tokens", "completion_tokens", "total_tokens" FROM "response_cache" WHERE "key" = ?`
	if s.db.Dialect().Name() == dialect.PG {
		q = strings.Replace(q, "?", "$1", 1)
	}
	stmt, err := s.db.DB.PrepareContext(context.WithoutCancel(ctx), q)
	if err != nil {
		return nil, err
	}
	s.cache.stmt = stmt
	return stmt, nil
}

// CachedResponse returns the answer stored under key in the response
// cache; ok is false when there is none.
func (s *Store) CachedResponse(ctx context.Context, key string) (resp *harness.ChatResponse, ok bool, err error) {
	var (
		content                []byte
		calls                  sql.NullString
		model, finish          string
		prompt, compl, totalTk int
	)
	// One row by its primary key, with a prepared statement on the raw
	// connection: this is on the path of every cached request.
	stmt, err := s.cacheStmt(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("read the response cache: %w", err)
	}
	err = stmt.QueryRowContext(ctx, key).
		Scan(&content, &calls, &model, &finish, &prompt, &compl, &totalTk)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the response cache: %w", err)
	}
	out := &harness.ChatResponse{
		Message: harness.Message{Role: harness.RoleAssistant, Content: string(content)},
		Usage:   harness.Usage{PromptTokens: prompt, CompletionTokens: compl, TotalTokens: totalTk},
		Model:   model, FinishReason: finish,
	}
	if calls.Valid && calls.String != "" && calls.String != "null" {
		if err := json.Unmarshal([]byte(calls.String), &out.Message.ToolCalls); err != nil {
			return nil, false, fmt.Errorf("read the response cache: tool calls: %w", err)
		}
	}
	return out, true, nil
}

// SaveCachedResponses stores answers in the response cache, in one
// transaction. A key already stored keeps its first answer.
func (s *Store) SaveCachedResponses(ctx context.Context, entries []CacheEntry) error {
	if len(entries) == 0 {
		return nil
	}
	now := Now()
	seen := make(map[string]bool, len(entries))
	rows := make([]*cacheRow, 0, len(entries))
	for _, e := range entries {
		if seen[e.Key] {
			continue
		}
		seen[e.Key] = true
		m := e.Response.Message
		rows = append(rows, &cacheRow{Key: e.Key, Content: []byte(m.Content), ToolCalls: m.ToolCalls, Model: e.Response.Model,
			FinishReason: e.Response.FinishReason, PromptTokens: e.Response.Usage.PromptTokens,
			CompletionTokens: e.Response.Usage.CompletionTokens, TotalTokens: e.Response.Usage.TotalTokens, CreatedAt: now})
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		keys := make([]string, len(rows))
		for i, r := range rows {
			keys[i] = r.Key
		}
		var have []string
		if err := tx.NewSelect().Model((*cacheRow)(nil)).Column("key").Where("key IN (?)", bun.List(keys)).Scan(ctx, &have); err != nil {
			return err
		}
		if len(have) > 0 {
			old := make(map[string]bool, len(have))
			for _, k := range have {
				old[k] = true
			}
			rows = deleteRows(rows, old)
		}
		return sqldb.Insert(ctx, tx, rows)
	})
	if err != nil {
		return fmt.Errorf("store in the response cache: %w", err)
	}
	return nil
}

func deleteRows(rows []*cacheRow, drop map[string]bool) []*cacheRow {
	out := rows[:0]
	for _, r := range rows {
		if !drop[r.Key] {
			out = append(out, r)
		}
	}
	return out
}

// CacheSize returns how many answers the response cache holds.
func (s *Store) CacheSize(ctx context.Context) (int, error) {
	n, err := s.db.NewSelect().Model((*cacheRow)(nil)).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count the response cache: %w", err)
	}
	return int(n), nil
}
