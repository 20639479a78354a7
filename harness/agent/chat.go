package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// MaxUserIDBytes is the longest user id accepted, in bytes.
const MaxUserIDBytes = 256

// ChatResult is the answer of one chat turn.
type ChatResult struct {
	// Response is the agent's reply.
	Response string `json:"response"`
	// SessionID names the conversation of the agent and the user.
	SessionID string `json:"session_id"`
	// ToolCalls lists the tool calls of the turn, in order, each as
	// {name, arguments, output} (arguments and output as JSON when they are
	// JSON, else as text).
	ToolCalls []map[string]any `json:"tool_calls"`
	// Usage sums the tokens of the turn's model calls.
	Usage harness.Usage `json:"usage"`
	// Sources are the knowledge-base chunks given to the model with the
	// user's message, best first; empty when the agent has no knowledge
	// base.
	Sources []harness.Source `json:"sources"`
	// Retrieval says how Sources were found; nil when the knowledge base
	// gave nothing.
	Retrieval *RetrievalInfo `json:"retrieval,omitempty"`
	// ToolRoundsExceeded reports that the model used all MaxToolRounds
	// rounds of tool calls and was then asked for its answer without
	// tools.
	ToolRoundsExceeded bool `json:"tool_rounds_exceeded,omitempty"`
}

// SessionID returns the id of the conversation of an agent with a user: a
// stable function of the two.
func SessionID(agentID, userID string) string {
	sum := sha256.Sum256([]byte(agentID + "\x00" + userID))
	return "s_" + hex.EncodeToString(sum[:12])
}

func checkUserID(ve *harness.ValidationError, userID string) {
	switch {
	case strings.TrimSpace(userID) == "":
		ve.Add("user_id", "is required")
	case len(userID) > MaxUserIDBytes:
		ve.Add("user_id", "is longer than %d bytes", MaxUserIDBytes)
	default:
		harness.CheckText(ve, "user_id", userID)
		harness.CheckName(ve, "user_id", userID)
	}
}

// Chat sends a user's message to an agent and returns its reply.
//
// The conversation of the agent with the user is stored, and its most
// recent messages (Options.MaxHistoryMessages, MaxHistoryTokens) go to the
// model after a system message made of the agent's system prompt and its
// knowledge base. The agent's tools are offered; their calls are answered
// by harness.RunToolLoop (the registered harness.Tool of the function's
// name, else the tool record's mock_response) for at most
// Options.MaxToolRounds rounds, after which the model is asked once more,
// without tools, for its reply.
//
// The user's message is stored first, so that it stays in the history when
// the model fails; the reply and the tool messages are stored when the turn
// succeeds, the reply with the knowledge-base chunks the model was given
// (ChatResult.Sources, Retrieval; see StoredMessage). Turns of one conversation run one at a time; those of
// different users run in parallel.
//
// An empty message or user id, or one holding a NUL or invalid UTF-8, gives
// harness.ErrInvalid naming "message" or "user_id", and nothing is stored;
// an unknown agent harness.ErrNotFound; a model failure an error
// wrapping the model's.
//
// The messages of a turn through Chat are stored as a chat through the
// API (no channel); a running channel's turns go through its
// harness.ChannelHost, which records the channel on each message.
func (s *Service) Chat(ctx context.Context, agentID, userID, message string) (*ChatResult, error) {
	return s.chat(ctx, agentID, userID, message, channelRef{})
}

// channelRef names the channel a turn came through: the type and the id
// of its channel record, both "" for a chat through the API.
type channelRef struct {
	typ, id string
}

// chat is Chat through the channel ch, recorded on every message the
// turn stores: the user's, the tool calls and their answers, the reply.
func (s *Service) chat(ctx context.Context, agentID, userID, message string, ch channelRef) (*ChatResult, error) {
	ve := &harness.ValidationError{}
	if strings.TrimSpace(message) == "" {
		ve.Add("message", "is required")
	}
	harness.CheckText(ve, "message", message)
	checkUserID(ve, userID)
	if err := ve.Err(); err != nil {
		return nil, err
	}
	if s.opts.Client == nil {
		return nil, fmt.Errorf("chat with agent %s: no model is configured", agentID)
	}
	a, err := loadAgent(ctx, s.db, agentID)
	if err != nil {
		return nil, err
	}
	unlock := s.chats.lock(agentID + "\x00" + userID)
	defer unlock()

	sid := SessionID(agentID, userID)
	row := &messageRow{AgentID: agentID, UserID: userID, SessionID: sid, Role: harness.RoleUser, Content: message, CreatedAt: now(),
		ChannelType: &ch.typ, ChannelID: &ch.id}
	if err := sqldb.InsertAll(ctx, s.db, []*messageRow{row}); err != nil {
		return nil, fmt.Errorf("chat with agent %s: store message: %w", agentID, err)
	}
	history, err := s.history(ctx, agentID, userID)
	if err != nil {
		return nil, fmt.Errorf("chat with agent %s: %w", agentID, err)
	}
	tools, err := s.agentTools(ctx, agentID)
	if err != nil {
		return nil, fmt.Errorf("chat with agent %s: %w", agentID, err)
	}
	msgs := make([]harness.Message, 0, len(history)+4)
	system, retrieved := s.systemMessage(ctx, a, message)
	if system != "" {
		msgs = append(msgs, harness.Message{Role: harness.RoleSystem, Content: system})
	}
	msgs = append(msgs, history...)

	res, added, err := s.turn(ctx, turn{agentID: agentID, userID: userID, model: s.modelOf(a), msgs: msgs, tools: tools})
	if err != nil {
		return nil, fmt.Errorf("chat with agent %s: %w", agentID, err)
	}
	res.SessionID = sid
	res.Sources, res.Retrieval = retrieved.Sources, retrievalInfo(retrieved)
	rows := make([]messageRow, len(added))
	for i, m := range added {
		rows[i] = messageRow{AgentID: agentID, UserID: userID, SessionID: sid, Role: m.Role, Content: m.Content,
			ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, CreatedAt: now(), ChannelType: &ch.typ, ChannelID: &ch.id}
	}
	// The reply (the turn's last message) keeps the sources it was given:
	// an empty list when the knowledge base gave nothing, so that it reads
	// apart from the other messages and from replies stored before
	// sources were recorded, which have none (NULL).
	if n := len(rows); n > 0 {
		rows[n-1].Sources, rows[n-1].Retrieval = res.Sources, res.Retrieval
	}
	// The reply is stored even when the caller has gone: the model's work
	// is done, and the history should hold it. (Should the agent have been
	// deleted meanwhile, these rows are orphans, removed when an agent of
	// the same id is created.)
	if err := sqldb.InsertAll(context.WithoutCancel(ctx), s.db, rows); err != nil {
		return nil, fmt.Errorf("chat with agent %s: store reply: %w", agentID, err)
	}
	return res, nil
}

// systemMessage is the system message of an agent for a user's message:
// the agent's system prompt, then the knowledge-base text retrieved for
// the message. A knowledge base that cannot be read is left out, with a
// log line: the agent answers without it rather than not at all. Chat and
// evaluations (EvalTarget) build it here, so that an evaluation measures
// what users get.
func (s *Service) systemMessage(ctx context.Context, a harness.Agent, message string) (string, harness.Retrieval) {
	system := a.SystemPrompt
	got, err := s.retriever.Retrieve(ctx, a.ID, message)
	if err != nil {
		s.log.Warn("knowledge base unavailable", slog.String("agent", a.ID), slog.Any("error", err))
		return system, harness.Retrieval{Sources: []harness.Source{}}
	}
	if got.Text != "" {
		system = strings.TrimSpace(system + "\n\n" + got.Text)
	}
	if got.Sources == nil {
		got.Sources = []harness.Source{}
	}
	return system, harness.Retrieval{Sources: got.Sources, Text: got.Text, Mode: got.Mode, Fallback: got.Fallback}
}

// retrievalInfo is how a chat reply says how its sources were found; nil
// when the knowledge base gave nothing.
func retrievalInfo(r harness.Retrieval) *RetrievalInfo {
	if r.Mode == "" {
		return nil
	}
	return &RetrievalInfo{Mode: r.Mode, Fallback: r.Fallback}
}

// modelOf is the model an agent asks for: its own, else the configured one.
func (s *Service) modelOf(a harness.Agent) string {
	if a.Model != nil {
		return *a.Model
	}
	return s.opts.Model
}

type turn struct {
	agentID, userID, model string
	msgs                   []harness.Message
	tools                  []harness.ToolDefinition
}

// turn asks the model and answers its tool calls until it replies, with
// harness.RunToolLoop (the loop evaluations use too). It returns the
// messages to add to the history: each assistant message that called
// tools with the tool messages answering it, then the reply.
func (s *Service) turn(ctx context.Context, t turn) (*ChatResult, []harness.Message, error) {
	loop, err := harness.RunToolLoop(ctx, &harness.ToolLoopRequest{
		Client:    s.opts.Client,
		Chat:      harness.ChatRequest{Model: t.model, Messages: t.msgs},
		Tools:     t.tools,
		Registry:  s.reg,
		MaxRounds: s.opts.MaxToolRounds,
		Call:      harness.ToolCallRequest{AgentID: t.agentID, UserID: t.userID},
	})
	if err != nil {
		return nil, nil, err
	}
	res := &ChatResult{Response: loop.Response, ToolCalls: loop.DetailsOfCalls(), Usage: loop.Usage,
		ToolRoundsExceeded: loop.RoundsExceeded}
	return res, loop.Messages, nil
}

// agentTools returns the tool records an agent lists. A tool deleted from
// the catalog since it was assigned is skipped, with a log line.
func (s *Service) agentTools(ctx context.Context, agentID string) ([]harness.ToolDefinition, error) {
	ids, err := s.toolIDs(ctx, s.db, agentID)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	out := make([]harness.ToolDefinition, 0, len(ids))
	for _, id := range ids {
		if s.opts.Tools == nil {
			s.log.Warn("agent tool skipped: no tool source", slog.String("agent", agentID), slog.String("tool", id))
			continue
		}
		def, err := s.opts.Tools.Tool(ctx, id)
		if errors.Is(err, harness.ErrNotFound) {
			s.log.Warn("agent tool no longer exists; skipped", slog.String("agent", agentID), slog.String("tool", id))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("load tool %s: %w", id, err)
		}
		out = append(out, def)
	}
	return out, nil
}

// messageTokens estimates the tokens of a message.
func messageTokens(m harness.Message) int {
	n := retrieval.Tokens(m.Content)
	for _, tc := range m.ToolCalls {
		n += retrieval.Tokens(tc.Name) + retrieval.Tokens(tc.Arguments)
	}
	return n
}

// history returns the most recent messages of a conversation within the
// message and token budgets, oldest first. An assistant message that calls
// tools and the tool messages answering it are kept or dropped together;
// the newest message is always kept.
func (s *Service) history(ctx context.Context, agentID, userID string) ([]harness.Message, error) {
	var rows []messageRow
	err := s.db.NewSelect().Model(&rows).Column("id", "role", "content", "tool_calls", "tool_call_id").
		Where("agent_id = ? AND user_id = ?", agentID, userID).
		Order("id DESC").Limit(int64(s.opts.MaxHistoryMessages)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("load history: %w", err)
	}
	// Group the messages, newest first.
	var groups [][]harness.Message
	var pending []harness.Message // tool messages waiting for their call, newest first
	for i := range rows {
		m := rows[i].message()
		switch {
		case m.Role == harness.RoleTool:
			pending = append(pending, m)
		case m.Role == harness.RoleAssistant && len(m.ToolCalls) > 0:
			if len(pending) == 0 {
				continue // calls without answers: not sendable
			}
			g := make([]harness.Message, 0, len(pending)+1)
			g = append(g, m)
			for j := len(pending) - 1; j >= 0; j-- {
				g = append(g, pending[j])
			}
			groups = append(groups, g)
			pending = nil
		default:
			pending = nil // answers whose call is gone
			groups = append(groups, []harness.Message{m})
		}
	}
	count, tokens := 0, 0
	keep := 0
	for i, g := range groups {
		gt := 0
		for _, m := range g {
			gt += messageTokens(m)
		}
		if i > 0 && (count+len(g) > s.opts.MaxHistoryMessages || tokens+gt > s.opts.MaxHistoryTokens) {
			break
		}
		count, tokens, keep = count+len(g), tokens+gt, i+1
	}
	out := make([]harness.Message, 0, count)
	for i := keep - 1; i >= 0; i-- {
		out = append(out, groups[i]...)
	}
	return out, nil
}

// Clear forgets the conversation of an agent with one user; the other
// users' conversations are untouched. An unknown agent gives
// harness.ErrNotFound, an empty user id harness.ErrInvalid naming
// "user_id".
func (s *Service) Clear(ctx context.Context, agentID, userID string) error {
	if _, err := s.deleteMessages(ctx, agentID, userID); err != nil {
		return fmt.Errorf("clear chat of agent %s: %w", agentID, err)
	}
	return nil
}

// History returns the stored conversation of an agent with a user, oldest
// first: every message, tool calls and tool answers included, not only
// those the model is sent.
func (s *Service) History(ctx context.Context, agentID, userID string) ([]harness.Message, error) {
	if _, err := loadAgent(ctx, s.db, agentID); err != nil {
		return nil, err
	}
	var rows []messageRow
	err := s.db.NewSelect().Model(&rows).Where("agent_id = ? AND user_id = ?", agentID, userID).Order("id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("load history: %w", err)
	}
	out := make([]harness.Message, len(rows))
	for i := range rows {
		out[i] = rows[i].message()
	}
	return out, nil
}

// keyedMutex is a set of mutexes by key, each dropped when no one holds or
// waits for it.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks key and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// size returns the number of keys held or waited for.
func (k *keyedMutex) size() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.locks)
}
