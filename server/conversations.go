package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

// conversationService is what the conversation operations need of the
// agent service.
type conversationService interface {
	Conversations(ctx context.Context, agentID string, q agent.ConversationsQuery) (*agent.ConversationList, error)
	Conversation(ctx context.Context, agentID, userID string, q agent.MessagesQuery) (*agent.Conversation, error)
	DeleteConversation(ctx context.Context, agentID, userID string) error
}

var _ conversationService = (*agent.Service)(nil)

type conversationHandler struct {
	problems
	convs conversationService
}

// apiConversationSummary is one conversation of a list.
type apiConversationSummary struct {
	UserID               string  `json:"user_id" doc:"The user's id, as the chat request or the channel gave it (telegram:<id> for Telegram users)."`
	Messages             int     `json:"messages" doc:"How many messages the conversation holds: the user's, the agent's, and the answers to its tool calls."`
	UpdatedAt            string  `json:"updated_at" doc:"When its last message was stored: YYYY-MM-DD HH:MM:SS, UTC."`
	Channel              *string `json:"channel" doc:"The type of the channel the conversation's latest message came through (telegram, webhook, a plugin's type); null for a chat through the API. For a message stored before Gauntlet recorded channels: the type the user id names by its prefix (telegram for telegram:12345), else null."`
	ChannelID            *string `json:"channel_id" doc:"The id of that channel's record (it may have been deleted since); null for a chat through the API, and for a message stored before Gauntlet recorded channels."`
	LastRole             string  `json:"last_role" enum:"user,assistant,tool" doc:"Who wrote the last message."`
	LastMessage          string  `json:"last_message" doc:"The start of the last message: at most 200 characters."`
	LastMessageTruncated bool    `json:"last_message_truncated" doc:"True when the last message is longer than last_message."`
}

// apiConversationList is the answer of list-conversations.
type apiConversationList struct {
	Conversations []apiConversationSummary `json:"conversations"`
	Total         int                      `json:"total" doc:"How many conversations the agent has, on every page."`
}

// apiMessageToolCall is a tool call of an assistant message.
type apiMessageToolCall struct {
	ID        string `json:"id" doc:"The call's id; the tool message answering it has it as tool_call_id."`
	Name      string `json:"name" doc:"The function called."`
	Arguments string `json:"arguments" doc:"The arguments, a JSON object as the model wrote it."`
}

// apiConversationMessage is one message of a conversation.
type apiConversationMessage struct {
	ID         int64                `json:"id" doc:"Orders the messages; pass it as before to read the messages that precede it."`
	Role       string               `json:"role" enum:"user,assistant,tool" doc:"user: the user's message. assistant: the agent's reply, or its call of tools (tool_calls). tool: a tool's answer to the call tool_call_id."`
	Content    string               `json:"content" doc:"The text; for a tool message, the tool's output."`
	ToolCalls  []apiMessageToolCall `json:"tool_calls,omitempty" doc:"The tools an assistant message calls, in order; absent when it calls none."`
	ToolCallID string               `json:"tool_call_id,omitempty" doc:"For a tool message, the id of the call it answers; absent otherwise."`
	CreatedAt  string               `json:"created_at" doc:"When it was stored: YYYY-MM-DD HH:MM:SS, UTC."`
	Channel    *string              `json:"channel" doc:"The type of the channel the message came through; null for a chat through the API. Every message of a turn has the channel of the user's message. Messages stored before Gauntlet recorded channels: as in a conversation list."`
	ChannelID  *string              `json:"channel_id" doc:"The id of that channel's record; null for a chat through the API or when not recorded."`
	Sources    []apiSource          `json:"sources" nullable:"true" doc:"On the reply of a turn (the assistant message that ends it): the knowledge-base chunks the model was given, best first, as the chat answer listed them; empty when the knowledge base gave nothing. null on every other message, and on replies stored before Gauntlet recorded sources."`
	Retrieval  orNull[apiRetrieval] `json:"retrieval" doc:"On a reply: how its sources were found; null when the knowledge base gave nothing, and on every other message."`
}

// apiConversation is the answer of get-conversation.
type apiConversation struct {
	UserID     string                   `json:"user_id"`
	Channel    *string                  `json:"channel" doc:"As in a conversation list: the channel type of the conversation's latest message (whatever page messages is), or null."`
	ChannelID  *string                  `json:"channel_id" doc:"As in a conversation list: the id of that channel's record, or null."`
	Messages   []apiConversationMessage `json:"messages" doc:"The messages asked for (by default the most recent), oldest first."`
	Total      int                      `json:"total" doc:"How many messages the whole conversation holds."`
	NextBefore *int64                   `json:"next_before" doc:"When older messages remain: the value of before that reads the page preceding this one; null when messages starts the conversation."`
}

type conversationsInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Limit   int    `query:"limit" default:"100" minimum:"1" maximum:"1000" doc:"Conversations per page."`
	Offset  int    `query:"offset" default:"0" minimum:"0" doc:"Conversations to skip."`
	Channel string `query:"channel" doc:"Only the conversations whose channel (that of their latest message) is this type, such as telegram or webhook; a type no conversation has lists none (a NUL or invalid UTF-8 is a 422). Absent or empty: every conversation."`
}

type conversationsOutput struct {
	Body apiConversationList
}

type conversationPath struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	UserID  string `path:"user_id" doc:"The user's id, percent-encoded: any text of at most 256 bytes (a / as %2F)."`
}

type conversationInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	UserID  string `path:"user_id" doc:"The user's id, percent-encoded: any text of at most 256 bytes (a / as %2F)."`
	Limit   int    `query:"limit" default:"200" minimum:"1" maximum:"1000" doc:"How many messages: the most recent ones (before before, when given)."`
	Before  int64  `query:"before" default:"0" minimum:"0" doc:"Only messages whose id is below this one: the next_before of the previous answer. 0 or absent: up to the most recent."`
}

type conversationOutput struct {
	Body apiConversation
}

// registerConversations registers the conversation operations.
func registerConversations(api huma.API, convs conversationService, log *slog.Logger) {
	h := &conversationHandler{problems{log}, convs}
	tags := []string{tagChat}
	register(api, huma.Operation{
		OperationID: "list-conversations", Method: http.MethodGet, Path: "/api/agents/{agent_id}/conversations",
		Summary: "List an agent's conversations", Tags: tags,
		Description: "One entry per user who has talked to the agent, through the chat endpoint or any channel, " +
			"the most recently updated first, with its message count, the channel of its latest message and the start of " +
			"that message; channel keeps those of one channel type. 404 for an unknown agent; 422 for a limit or offset " +
			"out of range, or a channel holding a NUL or invalid UTF-8.",
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
	}, h.list)
	register(api, huma.Operation{
		OperationID: "get-conversation", Method: http.MethodGet, Path: "/api/agents/{agent_id}/conversations/{user_id}",
		Summary: "Read an agent's conversation with one user", Tags: tags,
		Description: "Every stored message, oldest first: the user's, the agent's replies, its tool calls (tool_calls) and " +
			"the tools' answers (role tool). A long conversation comes in pages, the most recent first: next_before reads " +
			"the page before. 404 for an unknown agent or a user with no stored message; 422 for a user id that is blank, " +
			"longer than 256 bytes or holds a NUL or invalid UTF-8.",
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
	}, h.get)
	register(api, huma.Operation{
		OperationID: "delete-conversation", Method: http.MethodDelete, Path: "/api/agents/{agent_id}/conversations/{user_id}",
		Summary: "Clear an agent's conversation with one user", Tags: tags,
		Description: "Deletes every message of the conversation; the user's next message starts a new one. " +
			"404 for an unknown agent or a user with no stored message; 422 for a bad user id, as in get-conversation.",
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
	}, h.delete)
}

func (h *conversationHandler) list(ctx context.Context, in *conversationsInput) (*conversationsOutput, error) {
	l, err := h.convs.Conversations(ctx, in.AgentID, agent.ConversationsQuery{Limit: in.Limit, Offset: in.Offset, Channel: in.Channel})
	if err != nil {
		return nil, h.conversationProblem(ctx, err)
	}
	out := &conversationsOutput{Body: apiConversationList{Conversations: make([]apiConversationSummary, len(l.Conversations)), Total: l.Total}}
	for i, c := range l.Conversations {
		out.Body.Conversations[i] = apiConversationSummary{
			UserID: c.UserID, Messages: c.Messages, UpdatedAt: c.UpdatedAt,
			Channel: stringOrNull(c.Channel), ChannelID: stringOrNull(c.ChannelID),
			LastRole: c.LastRole, LastMessage: c.LastMessage, LastMessageTruncated: c.LastMessageTruncated,
		}
	}
	return out, nil
}

func (h *conversationHandler) get(ctx context.Context, in *conversationInput) (*conversationOutput, error) {
	c, err := h.convs.Conversation(ctx, in.AgentID, in.UserID, agent.MessagesQuery{Limit: in.Limit, Before: in.Before})
	if err != nil {
		return nil, h.conversationProblem(ctx, err)
	}
	out := &conversationOutput{Body: apiConversation{UserID: c.UserID, Channel: stringOrNull(c.Channel), ChannelID: stringOrNull(c.ChannelID),
		Total: c.Total, Messages: make([]apiConversationMessage, len(c.Messages))}}
	if c.Before != 0 {
		out.Body.NextBefore = &c.Before
	}
	for i, m := range c.Messages {
		am := apiConversationMessage{ID: m.ID, Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, CreatedAt: m.CreatedAt,
			Channel: stringOrNull(m.Channel), ChannelID: stringOrNull(m.ChannelID),
			Sources: toAPISources(m.Sources), Retrieval: toAPIRetrieval(m.Retrieval)}
		for _, tc := range m.ToolCalls {
			am.ToolCalls = append(am.ToolCalls, apiMessageToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		out.Body.Messages[i] = am
	}
	return out, nil
}

func (h *conversationHandler) delete(ctx context.Context, in *conversationPath) (*successOutput, error) {
	if err := h.convs.DeleteConversation(ctx, in.AgentID, in.UserID); err != nil {
		return nil, h.conversationProblem(ctx, err)
	}
	return success(), nil
}

// stringOrNull is s, or nil (JSON null) when s is empty.
func stringOrNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// conversationLocations says where each field the library may name is in
// a request of these operations.
var conversationLocations = map[string]string{
	"user_id": "path.user_id", "limit": "query.limit", "offset": "query.offset", "before": "query.before", "channel": "query.channel",
}

// conversationProblem is problem, with the invalid fields located in the
// path or the query rather than in a body these operations do not have.
func (h *conversationHandler) conversationProblem(ctx context.Context, err error) error {
	var ve *harness.ValidationError
	if !errors.As(err, &ve) {
		return h.problem(ctx, err)
	}
	details := make([]error, len(ve.Fields))
	msgs := make([]string, len(ve.Fields))
	for i, f := range ve.Fields {
		loc := conversationLocations[f.Field]
		if loc == "" {
			loc = f.Field
		}
		details[i] = &huma.ErrorDetail{Location: loc, Message: f.Message}
		msgs[i] = f.Error()
	}
	return huma.Error422UnprocessableEntity("validation failed: "+strings.Join(msgs, "; "), details...)
}
