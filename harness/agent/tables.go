package agent

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// The tables of the package. Agents, their tool lists, channels and
// conversations live in the database only: unlike definitions, they have
// no files on disk (the knowledge bases do, under DataDir/kb).

type agentRow struct {
	bun.BaseModel `bun:"table:agents"`
	ID            string  `bun:"id,pk"`
	Name          string  `bun:"name,notnull"`
	Description   string  `bun:"description,notnull"`
	SystemPrompt  string  `bun:"system_prompt,notnull"`
	Model         *string `bun:"model"`
	CreatedAt     string  `bun:"created_at,notnull"`
}

func toAgentRow(a harness.Agent) *agentRow {
	return &agentRow{ID: a.ID, Name: a.Name, Description: a.Description, SystemPrompt: a.SystemPrompt,
		Model: a.Model, CreatedAt: a.CreatedAt}
}

func (r *agentRow) agent() harness.Agent {
	return harness.Agent{ID: r.ID, Name: r.Name, Description: r.Description, SystemPrompt: r.SystemPrompt,
		Model: r.Model, CreatedAt: r.CreatedAt}
}

type agentToolRow struct {
	bun.BaseModel `bun:"table:agent_tools"`
	AgentID       string `bun:"agent_id,pk"`
	ToolID        string `bun:"tool_id,pk"`
	Position      int    `bun:"position,notnull"`
}

type channelRow struct {
	bun.BaseModel `bun:"table:agent_channels"`
	ID            string         `bun:"id,pk"`
	AgentID       string         `bun:"agent_id,notnull"`
	Type          string         `bun:"type,notnull"`
	Name          string         `bun:"name,notnull"`
	Config        map[string]any `bun:"config,type:text"`
	Status        string         `bun:"status,notnull"`
	LastError     string         `bun:"last_error,notnull"`
	// Desired is the state the user asked for, running or stopped: Resume
	// starts the channels whose desired state is running.
	Desired   string `bun:"desired,notnull"`
	CreatedAt string `bun:"created_at,notnull"`
}

func toChannelRow(c harness.ChannelConfig, desired string) *channelRow {
	cfg := c.Config
	if cfg == nil {
		cfg = map[string]any{}
	}
	return &channelRow{ID: c.ID, AgentID: c.AgentID, Type: c.Type, Name: c.Name, Config: cfg,
		Status: string(c.Status), LastError: c.LastError, Desired: desired, CreatedAt: c.CreatedAt}
}

// record returns the channel record with its config unmasked.
func (r *channelRow) record() harness.ChannelConfig {
	cfg := r.Config
	if cfg == nil {
		cfg = map[string]any{}
	}
	return harness.ChannelConfig{ID: r.ID, AgentID: r.AgentID, Type: r.Type, Name: r.Name, Config: cfg,
		Status: harness.ChannelStatus(r.Status), LastError: r.LastError, CreatedAt: r.CreatedAt}
}

type messageRow struct {
	bun.BaseModel `bun:"table:chat_messages"`
	ID            int64              `bun:"id,pk,autoincrement"`
	AgentID       string             `bun:"agent_id,notnull"`
	UserID        string             `bun:"user_id,notnull"`
	SessionID     string             `bun:"session_id,notnull"`
	Role          string             `bun:"role,notnull"`
	Content       string             `bun:"content,notnull"`
	ToolCalls     []harness.ToolCall `bun:"tool_calls,type:text,nullzero"`
	ToolCallID    string             `bun:"tool_call_id,notnull"`
	CreatedAt     string             `bun:"created_at,notnull"`
	// ChannelType and ChannelID are the type and the record id of the
	// channel the message came through, both "" for a chat through the
	// API; both NULL (nil) for a message stored before they were recorded
	// (agent schema 2).
	ChannelType *string `bun:"channel_type"`
	ChannelID   *string `bun:"channel_id"`
	// Sources are the knowledge-base chunks given to the model for a
	// reply (JSON), and Retrieval how they were found (JSON
	// RetrievalInfo); both NULL on other messages and on replies stored
	// before they were recorded (agent schema 3).
	Sources   []harness.Source `bun:"sources,type:text,nullzero"`
	Retrieval *RetrievalInfo   `bun:"retrieval,type:text,nullzero"`
}

// kbVectorRow is the embedding of one knowledge-base chunk's text by one
// model: keyed by the SHA-256 of the text (hex), so a chunk whose text is
// unchanged keeps its vector whatever else changes in the file. Vector
// holds Dims little-endian float32 values.
type kbVectorRow struct {
	bun.BaseModel `bun:"table:kb_vectors"`
	AgentID       string `bun:"agent_id,pk"`
	Model         string `bun:"model,pk"`
	Hash          string `bun:"hash,pk"`
	Dims          int    `bun:"dims,notnull"`
	Vector        []byte `bun:"vector,notnull"`
}

func (r *messageRow) message() harness.Message {
	return harness.Message{Role: r.Role, Content: r.Content, ToolCalls: r.ToolCalls, ToolCallID: r.ToolCallID}
}

// migrations are the agent tables' schema versions. Released migrations
// are never edited; a change is a new migration at the end.
var migrations = []sqldb.Migration{
	{Version: 1, Name: "agents, tools, channels and conversations as released in 0.1.0", Up: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx,
			`CREATE TABLE IF NOT EXISTS "agents" ("id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "description" VARCHAR NOT NULL, "system_prompt" VARCHAR NOT NULL, "model" VARCHAR, "created_at" VARCHAR NOT NULL, PRIMARY KEY ("id"))`,
			`CREATE TABLE IF NOT EXISTS "agent_tools" ("agent_id" VARCHAR NOT NULL, "tool_id" VARCHAR NOT NULL, "position" INTEGER NOT NULL, PRIMARY KEY ("agent_id", "tool_id"))`,
			`CREATE TABLE IF NOT EXISTS "agent_channels" ("id" VARCHAR NOT NULL, "agent_id" VARCHAR NOT NULL, "type" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "config" text, "status" VARCHAR NOT NULL, "last_error" VARCHAR NOT NULL, "desired" VARCHAR NOT NULL, "created_at" VARCHAR NOT NULL, PRIMARY KEY ("id"))`,
			`CREATE TABLE IF NOT EXISTS "chat_messages" ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "agent_id" VARCHAR NOT NULL, "user_id" VARCHAR NOT NULL, "session_id" VARCHAR NOT NULL, "role" VARCHAR NOT NULL, "content" VARCHAR NOT NULL, "tool_calls" text, "tool_call_id" VARCHAR NOT NULL, "created_at" VARCHAR NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS "agent_tools_tool" ON "agent_tools" ("tool_id")`,
			`CREATE INDEX IF NOT EXISTS "agent_channels_agent" ON "agent_channels" ("agent_id")`,
			`CREATE INDEX IF NOT EXISTS "chat_messages_conversation" ON "chat_messages" ("agent_id", "user_id", "id")`,
		)
	}, Postgres: pgBaseline},
	// The same statements suit both databases.
	{Version: 2, Name: "the channel of each chat message", Up: addMessageChannel, Postgres: addMessageChannel},
	{Version: 3, Name: "knowledge-base vectors; the sources of each chat reply", Up: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx,
			`CREATE TABLE "kb_vectors" ("agent_id" VARCHAR NOT NULL, "model" VARCHAR NOT NULL, "hash" VARCHAR NOT NULL, "dims" INTEGER NOT NULL, "vector" BLOB NOT NULL, PRIMARY KEY ("agent_id", "model", "hash"))`,
			`ALTER TABLE "chat_messages" ADD COLUMN "sources" text`,
			`ALTER TABLE "chat_messages" ADD COLUMN "retrieval" text`,
		)
	}, Postgres: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx,
			`CREATE TABLE "kb_vectors" ("agent_id" TEXT NOT NULL, "model" TEXT NOT NULL, "hash" TEXT NOT NULL, "dims" INTEGER NOT NULL, "vector" BYTEA NOT NULL, PRIMARY KEY ("agent_id", "model", "hash"))`,
			`ALTER TABLE "chat_messages" ADD COLUMN "sources" TEXT`,
			`ALTER TABLE "chat_messages" ADD COLUMN "retrieval" TEXT`,
		)
	}},
}

// addMessageChannel records the channel of each chat message. Messages
// stored before have none recorded: NULL, which readers tell apart from
// the "" of a chat through the API.
func addMessageChannel(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx,
		`ALTER TABLE "chat_messages" ADD COLUMN "channel_type" VARCHAR`,
		`ALTER TABLE "chat_messages" ADD COLUMN "channel_id" VARCHAR`,
	)
}

// pgBaseline creates the agent tables on PostgreSQL as they are at
// version 1.
func pgBaseline(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx,
		`CREATE TABLE "agents" ("id" TEXT NOT NULL, "name" TEXT NOT NULL, "description" TEXT NOT NULL, "system_prompt" TEXT NOT NULL, "model" TEXT, "created_at" TEXT NOT NULL, PRIMARY KEY ("id"))`,
		`CREATE TABLE "agent_tools" ("agent_id" TEXT NOT NULL, "tool_id" TEXT NOT NULL, "position" INTEGER NOT NULL, PRIMARY KEY ("agent_id", "tool_id"))`,
		`CREATE TABLE "agent_channels" ("id" TEXT NOT NULL, "agent_id" TEXT NOT NULL, "type" TEXT NOT NULL, "name" TEXT NOT NULL, "config" TEXT, "status" TEXT NOT NULL, "last_error" TEXT NOT NULL, "desired" TEXT NOT NULL, "created_at" TEXT NOT NULL, PRIMARY KEY ("id"))`,
		`CREATE TABLE "chat_messages" ("id" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "agent_id" TEXT NOT NULL, "user_id" TEXT NOT NULL, "session_id" TEXT NOT NULL, "role" TEXT NOT NULL, "content" TEXT NOT NULL, "tool_calls" TEXT, "tool_call_id" TEXT NOT NULL, "created_at" TEXT NOT NULL)`,
		`CREATE INDEX "agent_tools_tool" ON "agent_tools" ("tool_id")`,
		`CREATE INDEX "agent_channels_agent" ON "agent_channels" ("agent_id")`,
		`CREATE INDEX "chat_messages_conversation" ON "chat_messages" ("agent_id", "user_id", "id")`,
	)
}

// Migrate brings the agent tables in db to the newest schema, as Open
// does, without starting anything: for a command that prepares a
// database.
func Migrate(ctx context.Context, db *store.DB) error {
	if err := sqldb.Migrate(ctx, sqldb.Bun(db), "agent", migrations); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}
