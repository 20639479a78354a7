package agent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Bounds of the conversation listings.
const (
	// DefaultConversationsLimit is the page size of Conversations when
	// the query names none; MaxConversationsLimit the largest allowed.
	DefaultConversationsLimit = 100
	MaxConversationsLimit     = 1000
	// DefaultMessagesLimit is how many of a conversation's most recent
	// messages Conversation returns when the query names no limit;
	// MaxMessagesLimit the largest allowed.
	DefaultMessagesLimit = 200
	MaxMessagesLimit     = 1000
	// PreviewChars is the length, in characters, of the preview of a
	// conversation's last message.
	PreviewChars = 200
)

// ConversationSummary describes an agent's conversation with one user
// without its messages.
type ConversationSummary struct {
	// UserID is the user's id, as the chat or the channel gave it.
	UserID string
	// Channel and ChannelID are those of the conversation's latest message
	// (see StoredMessage): the channel through which the user last wrote,
	// the type and the channel record's id; both "" for a chat through the
	// API. A user who wrote through a channel and then through the API is
	// listed with no channel, and the other way round with the channel.
	Channel   string
	ChannelID string
	// Messages counts the stored messages: the user's, the agent's, and
	// the tool calls' answers.
	Messages int
	// UpdatedAt is when the last message was stored (harness.TimeLayout).
	UpdatedAt string
	// LastRole is the role of the last message (harness.RoleUser, …) and
	// LastMessage its first PreviewChars characters.
	LastRole    string
	LastMessage string
	// LastMessageTruncated reports that the last message is longer than
	// LastMessage.
	LastMessageTruncated bool
}

// ConversationsQuery selects a page of an agent's conversations, most
// recent first.
type ConversationsQuery struct {
	// Limit is the page size: 0 means DefaultConversationsLimit, at most
	// MaxConversationsLimit.
	Limit int
	// Offset is how many conversations to skip.
	Offset int
	// Channel, when not "", keeps the conversations whose Channel is this
	// type (as ConversationSummary.Channel: that of the latest message).
	// Any text is accepted: a type no conversation has matches none. A
	// NUL or invalid UTF-8 is harness.ErrInvalid naming "channel".
	Channel string
}

// ConversationList is a page of an agent's conversations.
type ConversationList struct {
	// Conversations are the page's, the most recently updated first.
	Conversations []ConversationSummary
	// Total counts every conversation of the agent (of the channel type
	// asked for, if any).
	Total int
}

// StoredMessage is a message of a conversation as stored.
type StoredMessage struct {
	// ID orders the messages of a conversation; a MessagesQuery's Before
	// refers to it.
	ID int64
	harness.Message
	// CreatedAt is when the message was stored (harness.TimeLayout).
	CreatedAt string
	// Channel is the type of the channel the message came through and
	// ChannelID the id of its channel record; both are "" for a chat
	// through the API (Service.Chat). Every message of a turn (the user's,
	// the tool calls and their answers, the reply) has the turn's channel.
	//
	// Messages stored by versions before channels were recorded (agent
	// schema 1) have none recorded: for them Channel is the type the user
	// id names by its prefix (ChannelOf), which recognises the telegram
	// channel's "telegram:<id>", and ChannelID is "", as it is unknown.
	Channel   string
	ChannelID string
	// Sources are, on the reply of a turn (the assistant message that
	// ends it), the knowledge-base chunks the model was given, best first:
	// empty (not nil) when the knowledge base gave nothing. They are nil on
	// every other message, and on replies stored before sources were
	// recorded (agent schema 3).
	Sources []harness.Source
	// Retrieval says how a reply's Sources were found; nil when the
	// knowledge base gave nothing, and on other messages.
	Retrieval *RetrievalInfo
}

// MessagesQuery selects the messages of a conversation: the Limit most
// recent ones before the message Before, returned oldest first.
type MessagesQuery struct {
	// Limit is how many messages: 0 means DefaultMessagesLimit, at most
	// MaxMessagesLimit.
	Limit int
	// Before, when not 0, keeps the messages whose ID is below it: pass a
	// Conversation's Before to read the messages that precede it.
	Before int64
}

// Conversation is (part of) an agent's conversation with one user.
type Conversation struct {
	UserID string
	// Channel and ChannelID are as in ConversationSummary: those of the
	// conversation's latest message, whatever page Messages is.
	Channel   string
	ChannelID string
	// Messages are the selected messages, oldest first, tool calls
	// (assistant messages with ToolCalls) and their answers (RoleTool
	// messages with ToolCallID) included.
	Messages []StoredMessage
	// Total counts every message of the conversation.
	Total int
	// Before is the ID of the first message returned when older messages
	// remain (the MessagesQuery.Before of the previous page), else 0.
	Before int64
}

// ChannelOf returns the channel type a user id names by its prefix: some
// channels pass their users to the agent as "<type>:<id>" (the telegram
// channel's "telegram:12345"), and the type is one the service's registry
// knows. An id without such a prefix (a chat through the API, or a
// channel that passes the ids it is given as they are, as the webhook
// channel does) names none: "".
//
// It is a guess, used only for the messages stored before the channel of
// each message was recorded: an API user named "telegram:x" would be
// taken for a Telegram user. The channel recorded on a message is exact.
func (s *Service) ChannelOf(userID string) string {
	typ, _, ok := strings.Cut(userID, ":")
	if !ok || typ == "" {
		return ""
	}
	if _, known := s.reg.Channel(typ); !known {
		return ""
	}
	return typ
}

// messageChannel is the channel of a stored message (see
// StoredMessage.Channel): the recorded one, else the guess from the user
// id.
func (s *Service) messageChannel(userID string, typ, id *string) (string, string) {
	if typ == nil {
		return s.ChannelOf(userID), ""
	}
	var cid string
	if id != nil {
		cid = *id
	}
	return *typ, cid
}

// channelFilter restricts a query of conversations, whose latest
// messages are m, to those of the channel type typ: the latest message
// has that channel recorded, or has none recorded and its user id names
// the type (ChannelOf).
func (s *Service) channelFilter(q *bun.SelectQuery, typ string) *bun.SelectQuery {
	_, known := s.reg.Channel(typ)
	if !known || strings.Contains(typ, ":") {
		return q.Where("m.channel_type = ?", typ)
	}
	prefix := typ + ":"
	return q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("m.channel_type = ?", typ).
			WhereOr("m.channel_type IS NULL AND SUBSTR(m.user_id, 1, ?) = ?", utf8.RuneCountInString(prefix), prefix)
	})
}

// Conversations returns a page of an agent's conversations, the most
// recently updated first, each with its message count, its channel and
// the start of its last message; q.Channel keeps those of one channel
// type. The messages themselves are not read: the counts come from one
// aggregate query, so an agent with thousands of users lists quickly. An
// unknown agent gives harness.ErrNotFound, a limit or offset out of range
// or a channel holding a NUL or invalid UTF-8 harness.ErrInvalid naming
// "limit", "offset" or "channel".
func (s *Service) Conversations(ctx context.Context, agentID string, q ConversationsQuery) (*ConversationList, error) {
	ve := &harness.ValidationError{}
	switch {
	case q.Limit < 0 || q.Limit > MaxConversationsLimit:
		ve.Add("limit", "must be between 1 and %d", MaxConversationsLimit)
	case q.Limit == 0:
		q.Limit = DefaultConversationsLimit
	}
	if q.Offset < 0 {
		ve.Add("offset", "must not be negative")
	}
	harness.CheckText(ve, "channel", q.Channel)
	if err := ve.Err(); err != nil {
		return nil, err
	}
	if _, err := loadAgent(ctx, s.db, agentID); err != nil {
		return nil, err
	}
	var groups []struct {
		UserID   string `bun:"user_id"`
		Messages int    `bun:"messages"`
		LastID   int64  `bun:"last_id"`
	}
	// The most recent conversation is the one whose last message has the
	// highest id: ids grow with every message stored, and created_at has
	// only whole seconds.
	all := s.db.NewSelect().TableExpr("chat_messages").
		ColumnExpr("user_id").ColumnExpr("COUNT(*) AS messages").ColumnExpr("MAX(id) AS last_id").
		Where("agent_id = ?", agentID).Group("user_id")
	page, count := all, s.db.NewSelect().TableExpr("chat_messages").ColumnExpr("COUNT(DISTINCT user_id)").
		Where("agent_id = ?", agentID)
	if q.Channel != "" {
		// A conversation's channel is its last message's: join it. (Two
		// queries: the page's gets an order and a limit.)
		filtered := func() *bun.SelectQuery {
			return s.channelFilter(s.db.NewSelect().TableExpr("(?) AS g", all).
				Join("JOIN chat_messages AS m ON m.id = g.last_id").ColumnExpr("g.user_id, g.messages, g.last_id"), q.Channel)
		}
		page, count = filtered(), s.db.NewSelect().TableExpr("(?) AS f", filtered()).ColumnExpr("COUNT(*)")
	}
	err := page.OrderExpr("last_id DESC").Limit(int64(q.Limit)).Offset(int64(q.Offset)).Scan(ctx, &groups)
	if err != nil {
		return nil, fmt.Errorf("list conversations of agent %s: %w", agentID, err)
	}
	var total int
	if err := count.Scan(ctx, &total); err != nil {
		return nil, fmt.Errorf("count conversations of agent %s: %w", agentID, err)
	}
	out := &ConversationList{Conversations: make([]ConversationSummary, len(groups)), Total: total}
	if len(groups) == 0 {
		return out, nil
	}
	ids := make([]int64, len(groups))
	for i, g := range groups {
		ids[i] = g.LastID
	}
	// The last messages, cut in the database: a long reply is not read
	// whole to show its start. One character more than the preview tells
	// whether it was cut.
	var last []struct {
		ID          int64   `bun:"id"`
		Role        string  `bun:"role"`
		Content     string  `bun:"content"`
		CreatedAt   string  `bun:"created_at"`
		ChannelType *string `bun:"channel_type"`
		ChannelID   *string `bun:"channel_id"`
	}
	err = s.db.NewSelect().TableExpr("chat_messages").
		ColumnExpr("id, role, created_at, channel_type, channel_id").ColumnExpr("SUBSTR(content, 1, ?) AS content", PreviewChars+1).
		Where("id IN (?)", bun.List(ids)).Scan(ctx, &last)
	if err != nil {
		return nil, fmt.Errorf("list conversations of agent %s: last messages: %w", agentID, err)
	}
	for i, g := range groups {
		c := ConversationSummary{UserID: g.UserID, Messages: g.Messages}
		for _, m := range last {
			if m.ID == g.LastID {
				c.Channel, c.ChannelID = s.messageChannel(g.UserID, m.ChannelType, m.ChannelID)
				c.UpdatedAt, c.LastRole = m.CreatedAt, m.Role
				c.LastMessage, c.LastMessageTruncated = preview(m.Content)
				break
			}
		}
		out.Conversations[i] = c
	}
	return out, nil
}

// preview returns the first PreviewChars characters of s, and whether s
// is longer. A byte of invalid UTF-8 counts as one character.
func preview(s string) (string, bool) {
	n := 0
	for i := 0; i < len(s); n++ {
		if n == PreviewChars {
			return s[:i], true
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s, false
}

// Conversation returns messages of an agent's conversation with a user,
// oldest first: by default the DefaultMessagesLimit most recent; q pages
// back through older ones. An unknown agent, or a user with no stored
// message, gives harness.ErrNotFound; a user id that is empty, too long or
// holds a NUL or invalid UTF-8, or a limit or before out of range,
// harness.ErrInvalid naming "user_id", "limit" or "before".
func (s *Service) Conversation(ctx context.Context, agentID, userID string, q MessagesQuery) (*Conversation, error) {
	ve := &harness.ValidationError{}
	checkUserID(ve, userID)
	switch {
	case q.Limit < 0 || q.Limit > MaxMessagesLimit:
		ve.Add("limit", "must be between 1 and %d", MaxMessagesLimit)
	case q.Limit == 0:
		q.Limit = DefaultMessagesLimit
	}
	if q.Before < 0 {
		ve.Add("before", "must not be negative")
	}
	if err := ve.Err(); err != nil {
		return nil, err
	}
	if _, err := loadAgent(ctx, s.db, agentID); err != nil {
		return nil, err
	}
	var rows []messageRow
	// One row more than asked says whether older messages remain.
	sel := s.db.NewSelect().Model(&rows).Where("agent_id = ? AND user_id = ?", agentID, userID)
	if q.Before > 0 {
		sel = sel.Where("id < ?", q.Before)
	}
	if err := sel.Order("id DESC").Limit(int64(q.Limit + 1)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("load conversation of agent %s: %w", agentID, err)
	}
	total, err := s.db.NewSelect().Model((*messageRow)(nil)).
		Where("agent_id = ? AND user_id = ?", agentID, userID).Count(ctx)
	if err != nil {
		return nil, fmt.Errorf("count conversation of agent %s: %w", agentID, err)
	}
	if total == 0 {
		return nil, fmt.Errorf("agent %q has no conversation with user %q: %w", agentID, userID, harness.ErrNotFound)
	}
	c := &Conversation{UserID: userID, Total: int(total)}
	if q.Before == 0 && len(rows) > 0 {
		c.Channel, c.ChannelID = s.messageChannel(userID, rows[0].ChannelType, rows[0].ChannelID)
	} else {
		// An older page: the conversation's channel is its latest message's.
		var latest messageRow
		err := s.db.NewSelect().Model(&latest).Column("channel_type", "channel_id").
			Where("agent_id = ? AND user_id = ?", agentID, userID).Order("id DESC").Limit(1).Scan(ctx)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("load conversation of agent %s: latest message: %w", agentID, err)
		}
		c.Channel, c.ChannelID = s.messageChannel(userID, latest.ChannelType, latest.ChannelID)
	}
	if len(rows) > q.Limit {
		rows = rows[:q.Limit]
		c.Before = rows[len(rows)-1].ID
	}
	slices.Reverse(rows)
	c.Messages = make([]StoredMessage, len(rows))
	for i := range rows {
		m := StoredMessage{ID: rows[i].ID, Message: rows[i].message(), CreatedAt: rows[i].CreatedAt,
			Sources: rows[i].Sources, Retrieval: rows[i].Retrieval}
		m.Channel, m.ChannelID = s.messageChannel(userID, rows[i].ChannelType, rows[i].ChannelID)
		c.Messages[i] = m
	}
	return c, nil
}

// DeleteConversation deletes every message of an agent's conversation
// with a user, as Clear does, but tells whether there was one: a user
// with no stored message gives harness.ErrNotFound, as does an unknown
// agent; a bad user id gives harness.ErrInvalid naming "user_id".
func (s *Service) DeleteConversation(ctx context.Context, agentID, userID string) error {
	n, err := s.deleteMessages(ctx, agentID, userID)
	if err != nil {
		return fmt.Errorf("delete conversation of agent %s: %w", agentID, err)
	}
	if n == 0 {
		return fmt.Errorf("agent %q has no conversation with user %q: %w", agentID, userID, harness.ErrNotFound)
	}
	return nil
}

// deleteMessages deletes every message of an agent's conversation with a
// user, while no turn of that conversation runs, and returns how many
// there were. A bad user id gives harness.ErrInvalid, an unknown agent
// harness.ErrNotFound.
func (s *Service) deleteMessages(ctx context.Context, agentID, userID string) (int64, error) {
	ve := &harness.ValidationError{}
	checkUserID(ve, userID)
	if err := ve.Err(); err != nil {
		return 0, err
	}
	if _, err := loadAgent(ctx, s.db, agentID); err != nil {
		return 0, err
	}
	unlock := s.chats.lock(agentID + "\x00" + userID)
	defer unlock()
	res, err := s.db.NewDelete().Model((*messageRow)(nil)).Where("agent_id = ? AND user_id = ?", agentID, userID).Exec(ctx)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
