package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

// channelStore is what the channel operations need of the agent service.
type channelStore interface {
	List(ctx context.Context, agentID string) ([]harness.ChannelConfig, error)
	Create(ctx context.Context, agentID string, c harness.ChannelConfig) (harness.ChannelConfig, error)
	Update(ctx context.Context, agentID, channelID string, apply func(*harness.ChannelConfig) error) (harness.ChannelConfig, error)
	Delete(ctx context.Context, agentID, channelID string) error
	Start(ctx context.Context, agentID, channelID string) (harness.ChannelConfig, error)
	Stop(ctx context.Context, agentID, channelID string) (harness.ChannelConfig, error)
	Inbound(ctx context.Context, channelID string, req *harness.InboundRequest) (*harness.InboundResponse, error)
}

var _ channelStore = (*agent.Supervisor)(nil)

type channelHandler struct {
	problems
	channels channelStore
}

// apiChannel is a channel as the API returns it.
type apiChannel struct {
	ID        string           `json:"id"`
	AgentID   string           `json:"agent_id"`
	Type      string           `json:"type" doc:"telegram, webhook, or a channel plugin's type."`
	Name      string           `json:"name"`
	Config    map[string]any   `json:"config" doc:"The type's settings; secrets (keys named like token, secret, password or key) are \"********\"."`
	Status    apiChannelStatus `json:"status"`
	LastError string           `json:"last_error" doc:"The last failure; empty when none."`
	CreatedAt string           `json:"created_at" doc:"YYYY-MM-DD HH:MM:SS, UTC."`
}

func toAPIChannel(c harness.ChannelConfig) apiChannel {
	cfg := c.Config
	if cfg == nil {
		cfg = map[string]any{}
	}
	return apiChannel{
		ID: c.ID, AgentID: c.AgentID, Type: c.Type, Name: c.Name, Config: cfg,
		Status: apiChannelStatus(c.Status), LastError: c.LastError, CreatedAt: c.CreatedAt,
	}
}

// apiChannelState is the answer of start-channel and stop-channel: the
// channel with success.
type apiChannelState struct {
	Success   bool             `json:"success" doc:"True: the request was carried out; status says how the channel is."`
	ID        string           `json:"id"`
	AgentID   string           `json:"agent_id"`
	Type      string           `json:"type"`
	Name      string           `json:"name"`
	Config    map[string]any   `json:"config" doc:"Secrets are \"********\"."`
	Status    apiChannelStatus `json:"status"`
	LastError string           `json:"last_error"`
	CreatedAt string           `json:"created_at"`
}

func toAPIChannelState(c harness.ChannelConfig) apiChannelState {
	a := toAPIChannel(c)
	return apiChannelState{
		Success: true, ID: a.ID, AgentID: a.AgentID, Type: a.Type, Name: a.Name, Config: a.Config,
		Status: a.Status, LastError: a.LastError, CreatedAt: a.CreatedAt,
	}
}

// apiChannelList is the answer of list-channels.
type apiChannelList struct {
	Channels []apiChannel `json:"channels" doc:"Oldest first."`
}

// apiChannelCreate is the body of create-channel.
type apiChannelCreate struct {
	Type   string         `json:"type,omitempty" api:"required" doc:"telegram, webhook, or a channel plugin's type."`
	Name   string         `json:"name,omitempty"`
	Config map[string]any `json:"config,omitempty" doc:"Settings of the type (telegram: bot_token, api_url; webhook: secret, callback_url)."`
}

// apiChannelUpdate is the body of update-channel: the fields present
// change.
type apiChannelUpdate struct {
	Type   *string        `json:"type,omitempty" doc:"If present, must be the channel's type: it cannot change."`
	Name   *string        `json:"name,omitempty"`
	Config map[string]any `json:"config,omitempty" doc:"Replaces the settings. Secrets come back as \"********\"; sending that back keeps the stored value, unless the update changes a *url* key (api_url, callback_url...): then the secrets must be sent again in clear (else 422)."`
}

func (f *apiChannelUpdate) apply(c *harness.ChannelConfig) {
	set(&c.Name, f.Name)
	if f.Config != nil {
		c.Config = f.Config
	}
}

// apiWebhookMessage is the body of channel-webhook for the built-in
// webhook channel type.
type apiWebhookMessage struct {
	UserID  string `json:"user_id,omitempty" api:"required" doc:"The sender; each has its own conversation. A JSON number is taken as its digits."`
	Message string `json:"message,omitempty" api:"required" doc:"The message text; not blank."`
}

// apiWebhookReply is the webhook's answer when the channel has no
// callback_url.
type apiWebhookReply struct {
	Success  bool        `json:"success" doc:"True."`
	Response string      `json:"response" doc:"The agent's reply."`
	Sources  []apiSource `json:"sources" doc:"The knowledge-base chunks the agent was given, best first, as in a chat answer; empty when its knowledge base gave nothing."`
}

// apiWebhookQueued is the webhook's answer when the channel has a
// callback_url: the reply is posted there later.
type apiWebhookQueued struct {
	Success   bool   `json:"success" doc:"True."`
	Queued    bool   `json:"queued" doc:"True: the reply goes to callback_url."`
	RequestID string `json:"request_id" doc:"Names the request in the callback."`
}

type channelPath struct {
	AgentID   string `path:"agent_id" doc:"Agent id."`
	ChannelID string `path:"channel_id" doc:"Channel id."`
}

type channelOutput struct {
	Body apiChannel
}

type channelStateOutput struct {
	Body apiChannelState
}

type listChannelsOutput struct {
	Body apiChannelList
}

type createChannelInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Body    apiChannelCreate
}

type updateChannelInput struct {
	AgentID   string `path:"agent_id" doc:"Agent id."`
	ChannelID string `path:"channel_id" doc:"Channel id."`
	Body      apiChannelUpdate
}

// registerChannels registers the channel operations. The webhook is a
// plain handler on mux, documented here.
func registerChannels(api huma.API, mux *http.ServeMux, channels channelStore, log *slog.Logger) {
	h := &channelHandler{problems{log}, channels}
	tags := []string{tagChannels}
	register(api, huma.Operation{
		OperationID: "list-channels", Method: http.MethodGet, Path: "/api/agents/{agent_id}/channels",
		Summary: "An agent's channels", Tags: tags, Description: "Secrets in config are masked. 404 for an unknown agent.",
		Errors: []int{http.StatusNotFound},
	}, h.list)
	register(api, huma.Operation{
		OperationID: "create-channel", Method: http.MethodPost, Path: "/api/agents/{agent_id}/channels",
		Summary: "Add a channel to an agent", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "The channel is created stopped; start it with .../start. 422 for an unknown type or settings the type refuses.",
		Errors:      []int{http.StatusNotFound},
	}, h.create)
	register(api, huma.Operation{
		OperationID: "update-channel", Method: http.MethodPut, Path: "/api/agents/{agent_id}/channels/{channel_id}",
		Summary: "Update a channel", Tags: tags,
		Description: "Changes name and config (type is fixed). A running channel restarts with the new config.",
		Errors:      []int{http.StatusNotFound},
	}, h.update)
	register(api, huma.Operation{
		OperationID: "delete-channel", Method: http.MethodDelete, Path: "/api/agents/{agent_id}/channels/{channel_id}",
		Summary: "Delete a channel", Tags: tags, Description: "Stops the channel first. 404 for an unknown agent or channel.",
		Errors: []int{http.StatusNotFound},
	}, h.delete)
	register(api, huma.Operation{
		OperationID: "start-channel", Method: http.MethodPost, Path: "/api/agents/{agent_id}/channels/{channel_id}/start",
		Summary: "Start a channel", Tags: tags,
		Description: "A running channel comes back when the server restarts. Failures show as status error with last_error, retried with backoff.",
		Errors:      []int{http.StatusNotFound},
	}, h.start)
	register(api, huma.Operation{
		OperationID: "stop-channel", Method: http.MethodPost, Path: "/api/agents/{agent_id}/channels/{channel_id}/stop",
		Summary: "Stop a channel", Tags: tags, Description: "The channel stays stopped across restarts. 404 for an unknown agent or channel.",
		Errors: []int{http.StatusNotFound},
	}, h.stop)

	// The webhook endpoint reads the raw body (its signature covers the
	// exact bytes), so it is a plain handler, documented here.
	mux.HandleFunc("POST /api/channels/{channel_id}/webhook", h.webhook)
	reg := api.OpenAPI().Components.Schemas
	addOperation(api, &huma.Operation{
		OperationID: "channel-webhook", Method: http.MethodPost, Path: "/api/channels/{channel_id}/webhook",
		Summary: "Deliver a message to a webhook channel", Tags: tags, Security: []map[string][]string{},
		Description: "Body {user_id, message}; header X-Gauntlet-Signature: sha256=<hex HMAC-SHA256 of the body keyed with the channel's secret>. " +
			"Needs no API token. A missing or wrong signature, an unknown channel id, a channel that is not running " +
			"and one that takes no webhooks all get the same 401, so that channel ids cannot be probed; " +
			"a NUL or invalid UTF-8 in the body is a 422; a body over 1 MiB is a 413, one that does not arrive within the read deadline a 408. " +
			"Each client address may have 8 requests in progress and send 10 a second, in bursts of 20 (the defaults): beyond, 429 with Retry-After. " +
			"Answers the agent's reply (200), or 202 when the channel has a callback_url and the reply is posted there; " +
			"429 when too many replies wait for delivery, 502 when the model endpoint failed. " +
			"The bodies shown are the built-in webhook type's; a channel plugin's type answers its own.",
		Parameters: []*huma.Param{
			{Name: "channel_id", In: "path", Required: true, Description: "Channel id.", Schema: &huma.Schema{Type: huma.TypeString}},
			{Name: "X-Gauntlet-Signature", In: "header", Required: true, Description: "sha256=<hex HMAC-SHA256 of the body keyed with the channel's secret>.",
				Schema: &huma.Schema{Type: huma.TypeString}},
		},
		RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
			"application/json": {Schema: reg.Schema(reflect.TypeFor[apiWebhookMessage](), true, "")},
		}},
		Responses: map[string]*huma.Response{
			"200": {Description: "The agent's reply.", Content: map[string]*huma.MediaType{
				"application/json": {Schema: reg.Schema(reflect.TypeFor[apiWebhookReply](), true, "")},
			}},
			"202": {Description: "Queued: the reply goes to callback_url.", Content: map[string]*huma.MediaType{
				"application/json": {Schema: reg.Schema(reflect.TypeFor[apiWebhookQueued](), true, "")},
			}},
		},
		Errors: []int{http.StatusUnauthorized, http.StatusNotFound, http.StatusRequestTimeout, http.StatusConflict, http.StatusRequestEntityTooLarge,
			http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusBadGateway},
	})
}

func (h *channelHandler) list(ctx context.Context, in *agentPath) (*listChannelsOutput, error) {
	cs, err := h.channels.List(ctx, in.AgentID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	out := &listChannelsOutput{Body: apiChannelList{Channels: make([]apiChannel, len(cs))}}
	for i, c := range cs {
		out.Body.Channels[i] = toAPIChannel(c)
	}
	return out, nil
}

func (h *channelHandler) create(ctx context.Context, in *createChannelInput) (*channelOutput, error) {
	c, err := h.channels.Create(ctx, in.AgentID, harness.ChannelConfig{Type: in.Body.Type, Name: in.Body.Name, Config: in.Body.Config})
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &channelOutput{Body: toAPIChannel(c)}, nil
}

func (h *channelHandler) update(ctx context.Context, in *updateChannelInput) (*channelOutput, error) {
	c, err := h.channels.Update(ctx, in.AgentID, in.ChannelID, func(c *harness.ChannelConfig) error {
		if in.Body.Type != nil && *in.Body.Type != c.Type {
			return harness.Invalid("type", "cannot change a channel's type; create another channel")
		}
		in.Body.apply(c)
		return nil
	})
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &channelOutput{Body: toAPIChannel(c)}, nil
}

func (h *channelHandler) delete(ctx context.Context, in *channelPath) (*successOutput, error) {
	if err := h.channels.Delete(ctx, in.AgentID, in.ChannelID); err != nil {
		return nil, h.problem(ctx, err)
	}
	return success(), nil
}

func (h *channelHandler) start(ctx context.Context, in *channelPath) (*channelStateOutput, error) {
	c, err := h.channels.Start(ctx, in.AgentID, in.ChannelID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &channelStateOutput{Body: toAPIChannelState(c)}, nil
}

func (h *channelHandler) stop(ctx context.Context, in *channelPath) (*channelStateOutput, error) {
	c, err := h.channels.Stop(ctx, in.AgentID, in.ChannelID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &channelStateOutput{Body: toAPIChannelState(c)}, nil
}

// maxWebhookBytes bounds a webhook delivery.
const maxWebhookBytes = DefaultBodyBytes

// webhookRefused is the one answer (401) to a webhook request whose
// signature is missing or wrong and to one for a channel id that is
// unknown, not running, or not a webhook: a client without the secret
// cannot tell which, so it cannot probe for channel ids.
const webhookRefused = "the X-Gauntlet-Signature header is missing or wrong, or no running channel with this id takes webhooks"

func (h *channelHandler) webhook(w http.ResponseWriter, r *http.Request) {
	// The limiter has refused a body over maxWebhookBytes, and bounded
	// the time it may take, before anything read it.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBytes))
	if err != nil {
		writeBodyError(w, err)
		return
	}
	// Raw bytes were checked by rejectBadText; a NUL written as \u0000
	// shows once decoded. Refused here, before a channel queues the
	// message and answers 202 without ever seeing it fail.
	var decoded any
	if json.Unmarshal(body, &decoded) == nil {
		ve := &harness.ValidationError{}
		harness.CheckText(ve, "", decoded)
		if ve.Err() != nil {
			h.writeError(w, r, ve)
			return
		}
	}
	res, err := h.channels.Inbound(r.Context(), r.PathValue("channel_id"), &harness.InboundRequest{Body: body, Header: r.Header})
	if errors.Is(err, agent.ErrNotReceiving) || errors.Is(err, harness.ErrUnauthorized) {
		h.log.DebugContext(r.Context(), "webhook request refused", slog.String("channel", r.PathValue("channel_id")), slog.Any("error", err))
		writeProblem(w, http.StatusUnauthorized, webhookRefused)
		return
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	status := res.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status >= 400 {
		// A channel's own failure (too many pending replies, the model
		// endpoint down) is a problem like any other error.
		detail := http.StatusText(status)
		if m, ok := res.Body.(map[string]any); ok {
			if e, ok := m["error"].(string); ok && e != "" {
				detail = e
			}
		}
		writeProblem(w, status, detail)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if res.Body != nil {
		enc := jsonEncoder(w)
		enc.Encode(res.Body)
	}
}
