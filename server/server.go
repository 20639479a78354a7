package server

import (
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// Version is the API version reported in the OpenAPI document.
const Version = "0.3.0"

// LLMConfig is the non-secret configuration of the model endpoint, as
// GET /api/config reports it.
type LLMConfig struct {
	BaseURL string
	Model   string
}

// Options configure a Server.
type Options struct {
	// Catalog holds the definitions. Required.
	Catalog *catalog.Catalog
	// Engine runs evaluations and Runs stores them; the evaluation,
	// results and history endpoints exist only when both are set.
	Engine *engine.Engine
	Runs   *runs.Store
	// Agents serves the agent endpoints, which exist only when it is set.
	Agents *agent.Service
	// LLM describes the model endpoint; Models asks it which models it
	// serves (GET /api/config/model). Models may be nil.
	LLM    LLMConfig
	Models harness.ModelLister
	// Plugins is the plugin manager GET /api/plugins reports on; nil
	// lists none.
	Plugins PluginLister
	// Debug is reported by GET /api/config.
	Debug bool
	// APIToken, when set, is required as "Authorization: Bearer <token>" on
	// every /api/ request.
	APIToken string
	// CORSOrigins are the origins whose web pages may call the API from a
	// browser: each scheme://host[:port], or "*" for any. Empty: none, only
	// pages the server serves itself.
	CORSOrigins []string
	// Logger receives request and error logs; nil means slog.Default().
	Logger *slog.Logger
	// Limits bound request sizes, read times and the webhooks' rates;
	// zero fields take DefaultLimits.
	Limits Limits
}

// Server is the HTTP API. Build it with New; serve it with HTTPServer(),
// or Handler() in an http.Server of one's own.
type Server struct {
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	api     huma.API
	handler http.Handler
	limits  *limiter
}

// New builds the API and registers every endpoint.
func New(opts Options) (*Server, error) {
	if opts.Catalog == nil {
		return nil, errors.New("server: Options.Catalog is required")
	}
	cors, err := newCORSPolicy(opts.CORSOrigins)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.api = newAPI(s.mux)

	registerConfig(s.api, configHandler{llm: opts.LLM, models: opts.Models, debug: opts.Debug})
	registerDomains(s.api, opts.Catalog, s.log)
	registerLevels(s.api, opts.Catalog, s.log)
	registerTests(s.api, opts.Catalog, s.log)
	registerDatasets(s.api, opts.Catalog, s.log)
	registerEvaluators(s.api, opts.Catalog, s.log)
	registerTools(s.api, opts.Catalog, s.log)
	registerTargets(s.api, opts.Catalog, s.log)
	registerDefinitions(s.api, opts.Catalog, s.log)
	registerPlugins(s.api, opts.Plugins, s.log)
	if opts.Engine != nil && opts.Runs != nil {
		// Every evaluation operation goes through the sweeper, so that a
		// sweep and single runs never overlap.
		sweeps := newSweeper(opts.Engine, s.log)
		registerRuns(s.api, sweeps, s.log)
		registerSweep(s.api, sweeps, s.log)
		registerHistory(s.api, opts.Runs, opts.Engine, s.log)
		registerResults(s.api, opts.Runs, s.log)
		registerCompare(s.api, opts.Runs, s.log)
	}
	if opts.Agents != nil {
		registerAgents(s.api, opts.Agents, s.log)
		registerKB(s.api, s.mux, opts.Agents.KB(), opts.Agents.KBStatus, s.log)
		registerKBSearch(s.api, opts.Agents, s.log)
		registerChannels(s.api, s.mux, opts.Agents.Supervisor(), s.log)
		registerChat(s.api, opts.Agents, s.log)
		registerConversations(s.api, opts.Agents, s.log)
	}
	finishAPI(s.api)

	s.mountDashboard()
	s.mux.HandleFunc("/api/", s.apiFallback)
	// Limits before anything reads a body; CORS before the token check (a
	// preflight carries no token), so that a 401 carries the CORS headers
	// too; compression around everything that writes a body.
	s.limits = newLimiter(opts.Limits, s.api.OpenAPI())
	s.handler = s.logRequests(s.limits.handler(cors.handler(compress(s.authenticate(assumeJSON(rejectBadText(s.limits.maxBody, rejectBadParams(s.mux))))))))
	return s, nil
}

// Handler returns the HTTP handler of the API.
func (s *Server) Handler() http.Handler { return s.handler }

// API returns the huma API, for tests. Its document is complete: an
// operation registered now would miss the conventions New applies.
func (s *Server) API() huma.API { return s.api }

// apiFallback answers /api/ requests that no operation matched with a
// problem+json 404, or 405 with an Allow header when the path exists for
// other methods. Without it the mux would answer in plain text.
func (s *Server) apiFallback(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/api/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeProblem(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use "+strings.Join(allow, " or "))
		return
	}
	writeProblem(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path+"; /docs lists them")
}

// authenticate requires the API token on /api/ paths when one is set.
func (s *Server) authenticate(next http.Handler) http.Handler {
	if s.opts.APIToken == "" {
		return next
	}
	want := []byte("Bearer " + s.opts.APIToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") && !isWebhook(r.URL.Path) {
			got := []byte(r.Header.Get("Authorization"))
			if subtle.ConstantTimeCompare(got, want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="gauntlet"`)
				writeProblem(w, http.StatusUnauthorized, "missing or wrong API token: send Authorization: Bearer <token>")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// assumeJSON treats a request body without a JSON content type as JSON
// when its type is absent or one that command-line clients send by
// default (curl -d sends application/x-www-form-urlencoded). The API
// speaks JSON only; multipart uploads keep their type.
func assumeJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		if mt, _, _ := strings.Cut(ct, ";"); r.Body != nil && r.ContentLength != 0 &&
			(ct == "" || strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") ||
				strings.EqualFold(strings.TrimSpace(mt), "text/plain")) {
			r.Header.Set("Content-Type", "application/json")
		}
		next.ServeHTTP(w, r)
	})
}

// isWebhook reports whether path is POST /api/channels/{id}/webhook, which
// authenticates with its signature instead of the API token.
func isWebhook(path string) bool {
	id, ok := strings.CutPrefix(path, "/api/channels/")
	if !ok {
		return false
	}
	id, ok = strings.CutSuffix(id, "/webhook")
	return ok && id != "" && !strings.Contains(id, "/")
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logRequests logs method, path, status and duration; never headers or
// bodies, so no secret reaches the log.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.log.Debug("request", slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)))
	})
}

// apiSuccess is the answer of a delete and of other operations that return
// no record.
type apiSuccess struct {
	Success bool `json:"success" doc:"True: the operation succeeded."`
}

// successOutput is the output of an operation answering {"success": true}.
type successOutput struct {
	Body apiSuccess
}

func success() *successOutput { return &successOutput{Body: apiSuccess{Success: true}} }

// set copies *src to *dst when the field was present in the request.
func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}
