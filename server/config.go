package server

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// ModelQueryTimeout bounds GET /api/config/model's question to the model
// endpoint.
const ModelQueryTimeout = 5 * time.Second

// configHandler answers from the server's settings and the model
// endpoint's list of models.
type configHandler struct {
	llm    LLMConfig
	models harness.ModelLister // may be nil
	debug  bool
}

// apiServerConfig is the answer of get-config.
type apiServerConfig struct {
	LLMBaseURL string `json:"llm_base_url" doc:"The OpenAI-compatible endpoint, without credentials."`
	LLMModel   string `json:"llm_model" doc:"The configured model name."`
	Debug      bool   `json:"debug"`
}

// apiModelInfo is the answer of get-config-model.
type apiModelInfo struct {
	Model       *string  `json:"model" doc:"The model the endpoint reports: the configured one when it serves it, else the first it lists; null when the endpoint did not answer."`
	ConfigModel string   `json:"config_model" doc:"The configured model name."`
	Available   []string `json:"available,omitempty" doc:"Every model the endpoint lists; absent when model is null."`
	Detail      string   `json:"detail,omitempty" doc:"Why model is null; absent otherwise."`
}

type configOutput struct {
	Body apiServerConfig
}

type modelOutput struct {
	Body apiModelInfo
}

// registerConfig registers the configuration operations.
func registerConfig(api huma.API, h configHandler) {
	tags := []string{tagConfig}
	register(api, huma.Operation{
		OperationID: "get-config", Method: http.MethodGet, Path: "/api/config",
		Summary: "Non-secret configuration of the model endpoint", Tags: tags,
		Description: "llm_base_url never shows credentials: user and password are removed, secret-looking query parameters (key, token, secret, pass, sig) masked.",
	}, h.get)
	register(api, huma.Operation{
		OperationID: "get-config-model", Method: http.MethodGet, Path: "/api/config/model",
		Summary: "The model the endpoint serves", Tags: tags,
		Description: "Asks the endpoint's GET /models (within 5 s). When it is unreachable, model is null and detail says why.",
	}, h.model)
}

func (h configHandler) get(context.Context, *struct{}) (*configOutput, error) {
	return &configOutput{Body: apiServerConfig{
		LLMBaseURL: harness.RedactURL(h.llm.BaseURL), LLMModel: h.llm.Model, Debug: h.debug,
	}}, nil
}

func (h configHandler) model(ctx context.Context, _ *struct{}) (*modelOutput, error) {
	out := &modelOutput{Body: apiModelInfo{ConfigModel: h.llm.Model}}
	if h.models == nil {
		out.Body.Detail = "no model endpoint is configured"
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ModelQueryTimeout)
	defer cancel()
	models, err := h.models.Models(ctx)
	switch {
	case err != nil:
		out.Body.Detail = "model endpoint unreachable: " + redactURLs(err.Error())
	case len(models) == 0:
		out.Body.Detail = "the model endpoint lists no models"
	default:
		m := models[0]
		if slices.Contains(models, h.llm.Model) {
			m = h.llm.Model
		}
		out.Body.Model = &m
		out.Body.Available = models
	}
	return out, nil
}

// redactURLs applies harness.RedactURL to every URL in a text, such as an
// error that quotes the address it failed to reach.
func redactURLs(text string) string { return harness.RedactURLsIn(text) }
