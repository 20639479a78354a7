package agent

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
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
}

func (r *messageRow) message() harness.Message {
	return harness.Message{Role: r.Role, Content: r.Content, ToolCalls: r.ToolCalls, ToolCallID: r.ToolCallID}
}

func createTables(ctx context.Context, db bun.IDB) error {
	if err := store.CreateTables(ctx, db, (*agentRow)(nil), (*agentToolRow)(nil), (*channelRow)(nil), (*messageRow)(nil)); err != nil {
		return err
	}
	for _, ix := range []struct {
		name, table string
		cols        []string
	}{
		{"agent_tools_tool", "agent_tools", []string{"tool_id"}},
		{"agent_channels_agent", "agent_channels", []string{"agent_id"}},
		{"chat_messages_conversation", "chat_messages", []string{"agent_id", "user_id", "id"}},
	} {
		if err := store.CreateIndex(ctx, db, ix.name, ix.table, ix.cols...); err != nil {
			return err
		}
	}
	return nil
}
