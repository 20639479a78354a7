package agent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// Defaults of the Options left at zero.
const (
	DefaultMaxHistoryMessages = 50
	DefaultMaxHistoryTokens   = 8000
	DefaultKBBudgetTokens     = retrieval.DefaultBudgetTokens
	DefaultMaxToolRounds      = harness.DefaultMaxToolRounds
	DefaultRetryBaseDelay     = time.Second
	DefaultRetryMaxDelay      = time.Minute
)

// ToolSource looks tool records up by id. *catalog.Catalog satisfies it;
// ToolList is one held in memory. Tool returns an error wrapping
// harness.ErrNotFound for an unknown id.
type ToolSource interface {
	Tool(ctx context.Context, id string) (harness.ToolDefinition, error)
}

// ToolList is a ToolSource over a fixed list of tool records, for programs
// that keep no catalog.
type ToolList []harness.ToolDefinition

var _ ToolSource = ToolList(nil)

// Tool returns the record with the given id.
func (l ToolList) Tool(_ context.Context, id string) (harness.ToolDefinition, error) {
	for _, t := range l {
		if t.ID == id {
			return t, nil
		}
	}
	return harness.ToolDefinition{}, fmt.Errorf("tool %q: %w", id, harness.ErrNotFound)
}

// Options configure a Service. DB is required; the others have defaults.
type Options struct {
	// DB holds the agents, their tool lists, channels and conversations
	// (see store.Open).
	DB *store.DB
	// DataDir holds the knowledge bases, in DataDir/kb/<agent_id>/. Empty
	// means no knowledge bases: the KB methods fail and chats use none.
	DataDir string
	// Tools looks up the tool records an agent lists. Nil means no tools:
	// SetTools refuses any id.
	Tools ToolSource
	// Registry knows the channel types and the tool implementations; nil
	// means an empty harness.NewRegistry().
	Registry *harness.Registry
	// Client answers chats; Model is the model asked for, unless an
	// agent names its own.
	Client harness.ChatModel
	Model  string
	// MaxHistoryMessages and MaxHistoryTokens bound the conversation sent
	// to the model: the most recent messages, the new one included, within
	// both limits (tokens estimated as characters / 4). Defaults 50 and
	// 8000. Every message is stored whatever the bound.
	MaxHistoryMessages int
	MaxHistoryTokens   int
	// KBBudgetTokens bounds the knowledge base in the system message
	// (default 4000): the whole base when it fits, else the chunks that
	// best match the user's message.
	KBBudgetTokens int
	// EmbeddingModel, with Embedder, makes knowledge-base retrieval
	// hybrid: each agent's chunks are embedded by this model in the
	// background (their vectors kept in the database, those of another
	// model replaced once the new set is complete), and the chunks are
	// ranked by BM25 and by cosine similarity to the message's embedding,
	// fused by reciprocal rank. Until the vectors are complete, or when
	// the endpoint fails, retrieval is BM25 and says why. Empty means BM25
	// only.
	EmbeddingModel string
	// Embedder computes the embeddings (an *llm.Client, say); required
	// with EmbeddingModel, else ignored.
	Embedder harness.Embedder
	// MaxToolRounds bounds the rounds of tool calls of one chat turn
	// (default 8); after them the model is asked once more, without
	// tools, for its answer.
	MaxToolRounds int
	// RetryBaseDelay and RetryMaxDelay pace the restarts of a failed
	// channel: the first after RetryBaseDelay (default 1 s), doubling up to
	// RetryMaxDelay (default 1 min).
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// Logger receives the service's log lines; nil discards them. Secrets
	// never appear in them.
	Logger *slog.Logger
	// LeaveChannels makes Open leave the channel records as they are, for
	// a process that uses the agents without running their channels (a
	// headless evaluation beside a server that runs them). Such a process
	// should not start channels.
	LeaveChannels bool
}

// Service manages agents: their records, tool lists and conversations,
// composing the parts that have their own types: the knowledge-base files
// (KB, a *kb.Store), what a chat is given of them (Retriever, a
// *retrieval.Retriever) and the channels (Supervisor). It is safe for
// concurrent use. Close it to stop its channels.
type Service struct {
	opts Options
	db   *bun.DB
	reg  *harness.Registry
	log  *slog.Logger

	chats keyedMutex // serialises the turns of one conversation

	kb        *kb.Store
	retriever *retrieval.Retriever
	channels  *Supervisor
}

// Open creates the service's tables if needed. Channels are not started:
// call Resume for those that were running. Open records every channel
// left "running" as stopped, since none runs in a process that just
// started: one process at a time should run the channels of a database
// (Options.LeaveChannels for the others).
func Open(ctx context.Context, opts Options) (*Service, error) {
	if opts.DB == nil {
		return nil, errors.New("agent: DB is required")
	}
	if opts.MaxHistoryMessages <= 0 {
		opts.MaxHistoryMessages = DefaultMaxHistoryMessages
	}
	if opts.MaxHistoryTokens <= 0 {
		opts.MaxHistoryTokens = DefaultMaxHistoryTokens
	}
	if opts.KBBudgetTokens <= 0 {
		opts.KBBudgetTokens = DefaultKBBudgetTokens
	}
	if opts.MaxToolRounds <= 0 {
		opts.MaxToolRounds = DefaultMaxToolRounds
	}
	if opts.RetryBaseDelay <= 0 {
		opts.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if opts.RetryMaxDelay <= 0 {
		opts.RetryMaxDelay = DefaultRetryMaxDelay
	}
	opts.RetryMaxDelay = max(opts.RetryMaxDelay, opts.RetryBaseDelay)
	s := &Service{
		opts: opts,
		db:   sqldb.Bun(opts.DB),
		reg:  opts.Registry,
		log:  opts.Logger,
	}
	if s.reg == nil {
		s.reg = harness.NewRegistry()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	kbDir := ""
	if opts.DataDir != "" {
		kbDir = filepath.Join(opts.DataDir, "kb")
	}
	s.kb = kb.New(kb.Options{Dir: kbDir, Logger: s.log, Check: func(ctx context.Context, agentID string) error {
		_, err := loadAgent(ctx, s.db, agentID)
		return err
	}, OnChange: func(agentID string) { s.retriever.Kick(agentID) }})
	if opts.Embedder == nil {
		opts.EmbeddingModel = ""
	}
	s.retriever = retrieval.New(retrieval.Options{KB: s.kb, BudgetTokens: opts.KBBudgetTokens, Logger: s.log,
		EmbeddingModel: opts.EmbeddingModel, Embedder: opts.Embedder, Vectors: dbVectors{s.db}})
	s.channels = newSupervisor(s.db, s.reg, s.log, opts.RetryBaseDelay, opts.RetryMaxDelay,
		func(rec harness.ChannelConfig) harness.ChannelHost {
			return &host{s: s, agentID: rec.AgentID, channel: channelRef{typ: rec.Type, id: rec.ID}}
		})
	if err := sqldb.Migrate(ctx, s.db, "agent", migrations); err != nil {
		s.retriever.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	if opts.LeaveChannels {
		return s, nil
	}
	// Nothing runs in a process that just started: a channel recorded
	// running was left so by one that stopped. Its desired state is kept,
	// for Resume.
	if _, err := s.db.NewUpdate().Model((*channelRow)(nil)).Set("status = ?", string(harness.ChannelStopped)).
		Where("status = ?", string(harness.ChannelRunning)).Exec(ctx); err != nil {
		s.retriever.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	return s, nil
}

func now() string { return time.Now().UTC().Format(harness.TimeLayout) }

func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, harness.ErrNotFound)
}

// Detail is an agent with its tool ids and its channels (configs masked),
// as GET /api/agents/{id} returns it.
type Detail struct {
	harness.Agent
	Tools    []string                `json:"tools"`
	Channels []harness.ChannelConfig `json:"channels"`
}

// List returns every agent, oldest first.
func (s *Service) List(ctx context.Context) ([]harness.Agent, error) {
	var rows []agentRow
	if err := s.db.NewSelect().Model(&rows).Order("created_at", "id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	out := make([]harness.Agent, len(rows))
	for i := range rows {
		out[i] = rows[i].agent()
	}
	return out, nil
}

// KB returns the store of the agents' knowledge-base files. Its methods
// refuse an unknown agent (harness.ErrNotFound), as the Service's do.
func (s *Service) KB() *kb.Store { return s.kb }

// Retriever returns what picks the knowledge-base text a chat is given.
func (s *Service) Retriever() *retrieval.Retriever { return s.retriever }

// Supervisor returns the supervisor of the agents' channels.
func (s *Service) Supervisor() *Supervisor { return s.channels }

// loadAgent returns an agent's record, or an error wrapping
// harness.ErrNotFound.
func loadAgent(ctx context.Context, db bun.IDB, id string) (harness.Agent, error) {
	var row agentRow
	err := db.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return harness.Agent{}, notFound("agent", id)
	case err != nil:
		return harness.Agent{}, fmt.Errorf("load agent %s: %w", id, err)
	}
	return row.agent(), nil
}

// Get returns an agent with its tool ids and channels, or an error wrapping
// harness.ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (*Detail, error) {
	a, err := loadAgent(ctx, s.db, id)
	if err != nil {
		return nil, err
	}
	tools, err := s.toolIDs(ctx, s.db, id)
	if err != nil {
		return nil, err
	}
	chans, err := s.channels.records(ctx, id)
	if err != nil {
		return nil, err
	}
	return &Detail{Agent: a, Tools: tools, Channels: chans}, nil
}

// normalize fills the defaults of an agent record: the name defaults to
// the id, and an empty model means the configured one (nil).
func normalize(a *harness.Agent) {
	if a.Name == "" {
		a.Name = a.ID
	}
	if a.Model != nil && *a.Model == "" {
		a.Model = nil
	}
}

// Create stores a new agent. Its id must match ^[a-zA-Z0-9_]+$ (at most
// 128 characters), else the error wraps harness.ErrInvalid naming "id"; an
// existing id gives harness.ErrConflict. CreatedAt is set to now (UTC); an
// empty name becomes the id.
func (s *Service) Create(ctx context.Context, a harness.Agent) (harness.Agent, error) {
	if err := (harness.Validator{}).Agent(&a); err != nil {
		return harness.Agent{}, fmt.Errorf("create agent: %w", err)
	}
	normalize(&a)
	a.CreatedAt = now()
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*agentRow)(nil)).Where("id = ?", a.ID).Count(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("agent %q already exists: %w", a.ID, harness.ErrConflict)
		}
		// Rows a chat still in flight stored after an agent of this id was
		// deleted belong to no one: the new agent starts afresh.
		if err := deleteOwned(ctx, tx, a.ID); err != nil {
			return err
		}
		_, err = tx.NewInsert().Model(toAgentRow(a)).Exec(ctx)
		return err
	})
	if err != nil {
		return harness.Agent{}, fmt.Errorf("create agent: %w", err)
	}
	return a, nil
}

// Update changes an agent: apply edits a copy of the stored record, which
// is then stored. Changing the id is refused (harness.ErrInvalid naming
// "id"); CreatedAt is kept. An error from apply is returned as is.
func (s *Service) Update(ctx context.Context, id string, apply func(*harness.Agent) error) (harness.Agent, error) {
	var out harness.Agent
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		a, err := loadAgent(ctx, tx, id)
		if err != nil {
			return err
		}
		created := a.CreatedAt
		if err := apply(&a); err != nil {
			return err
		}
		if a.ID != id {
			return harness.Invalid("id", "cannot be changed (is %q)", id)
		}
		if err := (harness.Validator{}).Agent(&a); err != nil {
			return err
		}
		normalize(&a)
		a.CreatedAt = created
		if _, err := tx.NewUpdate().Model(toAgentRow(a)).WherePK().Exec(ctx); err != nil {
			return err
		}
		out = a
		return nil
	})
	if err != nil {
		return harness.Agent{}, fmt.Errorf("update agent %s: %w", id, err)
	}
	return out, nil
}

// Delete removes an agent with everything it owns: its channels (stopped
// first), tool list, conversations, knowledge-base directory and the
// vectors of its chunks.
func (s *Service) Delete(ctx context.Context, id string) error {
	if _, err := loadAgent(ctx, s.db, id); err != nil {
		return err
	}
	err := s.channels.removeAgent(ctx, id, func() error {
		return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := deleteOwned(ctx, tx, id); err != nil {
				return err
			}
			_, err := tx.NewDelete().Model((*agentRow)(nil)).Where("id = ?", id).Exec(ctx)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("delete agent %s: %w", id, err)
	}
	s.retriever.Forget(id)
	if err := s.kb.RemoveAgent(id); err != nil {
		return fmt.Errorf("delete agent %s: %w", id, err)
	}
	// Again, after Forget cancelled an embedding in flight, which could
	// have stored vectors since the transaction.
	if err := (dbVectors{s.db}).RemoveVectors(ctx, id); err != nil {
		return fmt.Errorf("delete agent %s: %w", id, err)
	}
	return nil
}

// deleteOwned deletes the tool list, channels, messages and
// knowledge-base vectors of an agent id.
func deleteOwned(ctx context.Context, tx bun.IDB, id string) error {
	for _, m := range []any{(*agentToolRow)(nil), (*channelRow)(nil), (*messageRow)(nil), (*kbVectorRow)(nil)} {
		if _, err := tx.NewDelete().Model(m).Where("agent_id = ?", id).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) toolIDs(ctx context.Context, db bun.IDB, agentID string) ([]string, error) {
	ids := []string{}
	err := db.NewSelect().Model((*agentToolRow)(nil)).Column("tool_id").Where("agent_id = ?", agentID).
		Order("position").Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("load tools of agent %s: %w", agentID, err)
	}
	return ids, nil
}

// Tools returns the ids of the tools assigned to an agent, in order.
func (s *Service) Tools(ctx context.Context, id string) ([]string, error) {
	if _, err := loadAgent(ctx, s.db, id); err != nil {
		return nil, err
	}
	return s.toolIDs(ctx, s.db, id)
}

// SetTools replaces an agent's tool list. Every id must name a tool of the
// ToolSource, once; otherwise the error wraps harness.ErrInvalid naming
// each bad entry ("tools[2]") and nothing changes.
func (s *Service) SetTools(ctx context.Context, id string, toolIDs []string) ([]string, error) {
	if _, err := loadAgent(ctx, s.db, id); err != nil {
		return nil, err
	}
	ve := &harness.ValidationError{}
	for i, t := range toolIDs {
		f := fmt.Sprintf("tools[%d]", i)
		switch {
		case !harness.ValidID(t):
			ve.Add(f, "is not a valid tool id")
		case slices.Contains(toolIDs[:i], t):
			ve.Add(f, "tool %q is listed twice", t)
		case s.opts.Tools == nil:
			ve.Add(f, "unknown tool %q (no tool source is configured)", t)
		default:
			if _, err := s.opts.Tools.Tool(ctx, t); errors.Is(err, harness.ErrNotFound) {
				ve.Add(f, "unknown tool %q", t)
			} else if err != nil {
				return nil, fmt.Errorf("set tools of agent %s: %w", id, err)
			}
		}
	}
	if err := ve.Err(); err != nil {
		return nil, fmt.Errorf("set tools of agent %s: %w", id, err)
	}
	out := slices.Clone(toolIDs)
	if out == nil {
		out = []string{}
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := loadAgent(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*agentToolRow)(nil)).Where("agent_id = ?", id).Exec(ctx); err != nil {
			return err
		}
		if len(out) == 0 {
			return nil
		}
		rows := make([]agentToolRow, len(out))
		for i, t := range out {
			rows[i] = agentToolRow{AgentID: id, ToolID: t, Position: i}
		}
		_, err := tx.NewInsert().Model(&rows).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("set tools of agent %s: %w", id, err)
	}
	return out, nil
}

// ToolUsers returns the ids of the agents that list a tool, sorted, so
// that the catalog can refuse to delete a tool still in use.
func (s *Service) ToolUsers(ctx context.Context, toolID string) ([]string, error) {
	ids := []string{}
	err := s.db.NewSelect().Model((*agentToolRow)(nil)).Column("agent_id").Where("tool_id = ?", toolID).
		Order("agent_id").Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("tool users of %s: %w", toolID, err)
	}
	return ids, nil
}
