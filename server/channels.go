package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
)

type channelHandler struct{ s *Server }

type channelFields struct {
	Type   *string        `json:"type,omitempty" doc:"telegram, webhook, or a channel plugin's type. Required on creation."`
	Name   *string        `json:"name,omitempty"`
	Config map[string]any `json:"config,omitempty" doc:"Settings of the type (telegram: bot_token, api_url; webhook: secret, callback_url). Secrets come back as \"********\"; sending that back keeps the stored value, unless the update changes a *url* key (api_url, callback_url...): then the secrets must be sent again in clear (else 422)."`
}

func (f *channelFields) apply(c *harness.ChannelConfig) {
	set(&c.Type, f.Type)
	set(&c.Name, f.Name)
	if f.Config != nil {
		c.Config = f.Config
	}
}

type channelPath struct {
	AgentID   string `path:"agent_id" doc:"Agent id."`
	ChannelID string `path:"channel_id" doc:"Channel id."`
}

type channelOutput struct {
	Body harness.ChannelConfig
}

// channelActionOutput is the answer of start and stop: the channel record
// with success, as the spec's start/stop answers carry.
type channelActionOutput struct {
	Body struct {
		Success bool `json:"success"`
		harness.ChannelConfig
	}
}

type listChannelsOutput struct {
	Body struct {
		Channels []harness.ChannelConfig `json:"channels"`
	}
}

type createChannelInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Body    channelFields
}

type updateChannelInput struct {
	AgentID   string `path:"agent_id" doc:"Agent id."`
	ChannelID string `path:"channel_id" doc:"Channel id."`
	Body      channelFields
}

func (h *channelHandler) register(api huma.API) {
	tags := []string{"Agent channels"}
	huma.Register(api, huma.Operation{
		OperationID: "list-channels", Method: http.MethodGet, Path: "/api/agents/{agent_id}/channels",
		Summary: "An agent's channels", Tags: tags,
	}, h.list)
	huma.Register(api, huma.Operation{
		OperationID: "create-channel", Method: http.MethodPost, Path: "/api/agents/{agent_id}/channels",
		Summary: "Add a channel to an agent", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "The channel is created stopped; start it with .../start.",
	}, h.create)
	huma.Register(api, huma.Operation{
		OperationID: "update-channel", Method: http.MethodPut, Path: "/api/agents/{agent_id}/channels/{channel_id}",
		Summary: "Update a channel", Tags: tags,
		Description: "Changes name and config (type is fixed). A running channel restarts with the new config.",
	}, h.update)
	huma.Register(api, huma.Operation{
		OperationID: "delete-channel", Method: http.MethodDelete, Path: "/api/agents/{agent_id}/channels/{channel_id}",
		Summary: "Delete a channel", Tags: tags,
	}, h.delete)
	huma.Register(api, huma.Operation{
		OperationID: "start-channel", Method: http.MethodPost, Path: "/api/agents/{agent_id}/channels/{channel_id}/start",
		Summary: "Start a channel", Tags: tags,
		Description: "A running channel comes back when the server restarts. Failures show as status error with last_error, retried with backoff.",
	}, h.start)
	huma.Register(api, huma.Operation{
		OperationID: "stop-channel", Method: http.MethodPost, Path: "/api/agents/{agent_id}/channels/{channel_id}/stop",
		Summary: "Stop a channel", Tags: tags,
	}, h.stop)

	// The webhook endpoint reads the raw body (its signature covers the
	// exact bytes), so it is a plain handler, documented here.
	h.s.mux.HandleFunc("POST /api/channels/{channel_id}/webhook", h.webhook)
	api.OpenAPI().AddOperation(&huma.Operation{
		OperationID: "channel-webhook", Method: http.MethodPost, Path: "/api/channels/{channel_id}/webhook",
		Summary: "Deliver a message to a webhook channel", Tags: tags, Security: []map[string][]string{},
		Description: "Body {user_id, message}; header X-Gauntlet-Signature: sha256=<hex HMAC-SHA256 of the body keyed with the channel's secret>. " +
			"Needs no API token; a missing or wrong signature is a 401; a NUL or invalid UTF-8 in the body is a 422. Answers {success, response}, or 202 {success, queued} when the channel has a callback_url.",
		Parameters: []*huma.Param{
			{Name: "channel_id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString}},
			{Name: "X-Gauntlet-Signature", In: "header", Required: true, Schema: &huma.Schema{Type: huma.TypeString}},
		},
		RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
			"application/json": {Schema: &huma.Schema{Type: huma.TypeObject, Properties: map[string]*huma.Schema{
				"user_id": {Type: huma.TypeString}, "message": {Type: huma.TypeString},
			}}},
		}},
		Responses: map[string]*huma.Response{
			"200": {Description: "The agent's reply", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Type: huma.TypeObject}}}},
			"202": {Description: "Queued: the reply goes to callback_url"},
			"401": {Description: "Missing or wrong signature"},
			"422": {Description: "A NUL or invalid UTF-8 in the body"},
			"404": {Description: "Unknown channel"},
		},
	})
}

func (h *channelHandler) list(ctx context.Context, in *struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
}) (*listChannelsOutput, error) {
	cs, err := h.s.opts.Agents.Channels(ctx, in.AgentID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &listChannelsOutput{}
	out.Body.Channels = cs
	return out, nil
}

func (h *channelHandler) create(ctx context.Context, in *createChannelInput) (*channelOutput, error) {
	var c harness.ChannelConfig
	in.Body.apply(&c)
	c, err := h.s.opts.Agents.CreateChannel(ctx, in.AgentID, c)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &channelOutput{Body: c}, nil
}

func (h *channelHandler) update(ctx context.Context, in *updateChannelInput) (*channelOutput, error) {
	c, err := h.s.opts.Agents.UpdateChannel(ctx, in.AgentID, in.ChannelID, func(c *harness.ChannelConfig) error {
		if in.Body.Type != nil && *in.Body.Type != c.Type {
			return harness.Invalid("type", "cannot change a channel's type; create another channel")
		}
		in.Body.apply(c)
		return nil
	})
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &channelOutput{Body: c}, nil
}

func (h *channelHandler) delete(ctx context.Context, in *channelPath) (*ok, error) {
	if err := h.s.opts.Agents.DeleteChannel(ctx, in.AgentID, in.ChannelID); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return success(), nil
}

func (h *channelHandler) start(ctx context.Context, in *channelPath) (*channelActionOutput, error) {
	c, err := h.s.opts.Agents.StartChannel(ctx, in.AgentID, in.ChannelID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &channelActionOutput{}
	out.Body.Success, out.Body.ChannelConfig = true, c
	return out, nil
}

func (h *channelHandler) stop(ctx context.Context, in *channelPath) (*channelActionOutput, error) {
	c, err := h.s.opts.Agents.StopChannel(ctx, in.AgentID, in.ChannelID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &channelActionOutput{}
	out.Body.Success, out.Body.ChannelConfig = true, c
	return out, nil
}

// maxWebhookBytes bounds a webhook delivery.
const maxWebhookBytes = 1 << 20

func (h *channelHandler) webhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBytes))
	if err != nil {
		writeProblem(w, http.StatusRequestEntityTooLarge, "the body is over 1 MiB")
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
			h.s.writeError(w, r, ve)
			return
		}
	}
	res, err := h.s.opts.Agents.Inbound(r.Context(), r.PathValue("channel_id"), &harness.InboundRequest{Body: body, Header: r.Header})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	status := res.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if res.Body != nil {
		enc := jsonEncoder(w)
		enc.Encode(res.Body)
	}
}
