package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// The bounds of a sweep's model list.
const (
	MinSweepModels = 2
	MaxSweepModels = 20
	// maxModelName bounds one model name of a sweep, in bytes.
	maxModelName = 256
)

// The statuses of a sweep.
const (
	SweepRunning   = "running"
	SweepCompleted = "completed"
	SweepStopped   = "stopped"
)

// sweeper runs sweeps: the same evaluation once per model, one run after
// another, each an ordinary stored run labelled by its model. It wraps the
// engine and is also the engine the evaluation operations use, so that
// while a sweep is active starting or resuming a run is a conflict, and
// stopping or resetting ends the sweep as well as its current run.
//
// A sweep lives in memory: a server that stops ends it (its current run
// ends as any run does then), and the runs it finished stay in the
// history.
type sweeper struct {
	runEngine

	// mu guards last, and is held while a run of a sweep or a run the
	// user asked for starts, so that neither slips in while the other
	// starts.
	mu   sync.Mutex
	last *sweep
	log  *slog.Logger
}

// sweep is the state of one sweep.
type sweep struct {
	id       string
	models   []string
	runIDs   []string
	status   string
	err      string
	stopping bool                // stop or reset asked for it to end
	req      engine.StartRequest // the request of every run, but for the model and label
	ctx      context.Context     // what the runs live in
	finished chan runs.Info      // the end of the current run
}

var _ runEngine = (*sweeper)(nil)

func newSweeper(eng runEngine, log *slog.Logger) *sweeper {
	return &sweeper{runEngine: eng, log: log}
}

// active returns the sweep in progress, if any. s.mu must be held.
func (s *sweeper) active() *sweep {
	if s.last != nil && s.last.status == SweepRunning {
		return s.last
	}
	return nil
}

func (s *sweeper) conflict(sw *sweep) error {
	return fmt.Errorf("sweep %s is active (model %d of %d); stop it first: %w",
		sw.id, len(sw.runIDs), len(sw.models), harness.ErrConflict)
}

// Start starts a run unless a sweep is active.
func (s *sweeper) Start(ctx context.Context, req engine.StartRequest) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sw := s.active(); sw != nil {
		return "", s.conflict(sw)
	}
	return s.runEngine.Start(ctx, req)
}

// ResumeWith resumes a run unless a sweep is active.
func (s *sweeper) ResumeWith(ctx context.Context, runID string, opts engine.ResumeOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sw := s.active(); sw != nil {
		return s.conflict(sw)
	}
	return s.runEngine.ResumeWith(ctx, runID, opts)
}

// Rescore starts a rescore, as Start starts a run: not while a sweep is
// active, even between two of its runs.
func (s *sweeper) Rescore(ctx context.Context, runID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sw := s.active(); sw != nil {
		return "", s.conflict(sw)
	}
	return s.runEngine.Rescore(ctx, runID)
}

// Stop stops the active run and, during a sweep, the rest of the sweep.
func (s *sweeper) Stop(wait time.Duration) (string, error) {
	s.mu.Lock()
	sw := s.active()
	var last string
	if sw != nil {
		sw.stopping = true
		last = sw.runIDs[len(sw.runIDs)-1]
	}
	s.mu.Unlock()
	id, err := s.runEngine.Stop(wait)
	if sw != nil && errors.Is(err, engine.ErrNotRunning) {
		// Between two runs: the sweep ends before the next one starts.
		return last, nil
	}
	return id, err
}

// Reset resets the engine and ends an active sweep.
func (s *sweeper) Reset() string {
	s.mu.Lock()
	if sw := s.active(); sw != nil {
		sw.stopping = true
	}
	s.mu.Unlock()
	return s.runEngine.Reset()
}

// startSweep checks models and starts the sweep's first run; the others
// follow in the background. ctx is what the runs live in.
func (s *sweeper) startSweep(ctx context.Context, req engine.StartRequest, models []string) (*sweep, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sw := s.active(); sw != nil {
		return nil, s.conflict(sw)
	}
	sw := &sweep{id: newSweepID(time.Now()), models: models, status: SweepRunning, req: req, ctx: ctx,
		finished: make(chan runs.Info, 1)}
	// The first run checks the request as every run would: the runs
	// differ only in their model and label.
	if err := s.startNext(sw); err != nil {
		return nil, err
	}
	s.last = sw
	go s.follow(sw)
	return sw, nil
}

// startNext starts the run of the next model of sw. s.mu must be held.
func (s *sweeper) startNext(sw *sweep) error {
	req := sw.req
	req.Model = sw.models[len(sw.runIDs)]
	req.ModelName = req.Model
	req.OnEvent = func(ev engine.Event) {
		if ev.Kind == engine.EventRunFinished && ev.Info != nil {
			sw.finished <- *ev.Info
		}
	}
	id, err := s.runEngine.Start(sw.ctx, req)
	if err != nil {
		return err
	}
	sw.runIDs = append(sw.runIDs, id)
	return nil
}

// follow waits for each run of sw to end and starts the next, until every
// model has had its run or the sweep is stopped.
func (s *sweeper) follow(sw *sweep) {
	for info := range sw.finished {
		s.mu.Lock()
		switch {
		case sw.stopping || sw.ctx.Err() != nil || info.Status == runs.StatusAborted:
			sw.status = SweepStopped
		case len(sw.runIDs) == len(sw.models):
			sw.status = SweepCompleted
		default:
			if err := s.startNext(sw); err != nil {
				sw.status, sw.err = SweepStopped, fmt.Sprintf("the run of model %s did not start: %v", sw.models[len(sw.runIDs)], err)
				s.log.Warn("sweep stopped", slog.String("sweep", sw.id), slog.String("error", sw.err))
			}
		}
		done := sw.status != SweepRunning
		s.mu.Unlock()
		if done {
			return
		}
	}
}

// snapshot returns the last sweep as the API shows it; false when there
// has been none.
func (s *sweeper) snapshot() (apiSweep, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sw := s.last
	if sw == nil {
		return apiSweep{}, false
	}
	out := apiSweep{SweepID: sw.id, Status: sw.status, Models: append([]string(nil), sw.models...),
		RunIDs: append([]string{}, sw.runIDs...), Error: sw.err}
	if sw.status == SweepRunning {
		m := sw.models[len(sw.runIDs)-1]
		out.Current = &m
	}
	return out, true
}

func newSweepID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return "sweep-" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// apiSweepStart is the body of start-sweep: the start body's fields, which
// apply to every run, and the models.
type apiSweepStart struct {
	apiRunStart
	Models []string `json:"models,omitempty" api:"required" minItems:"2" maxItems:"20" doc:"The models to run, in order: one run each, labelled by its model, 2 to 20 distinct non-empty names. The first is the baseline a comparison of the sweep's runs starts from."`
}

// TransformSchema gives the sweep body's schema the start body's fields
// but model and model_name (checkSweep refuses them):
// huma leaves out the fields of an unexported embedded struct, which
// encoding/json decodes. The properties are the start body's own schemas,
// so the two bodies are checked alike and cannot drift apart.
func (apiSweepStart) TransformSchema(r huma.Registry, s *huma.Schema) *huma.Schema {
	run := r.Schema(reflect.TypeFor[apiRunStart](), false, "")
	for name, p := range run.Properties {
		// A sweep's runs take their model and label from models.
		if _, ok := s.Properties[name]; !ok && name != "model" && name != "model_name" {
			s.Properties[name] = p
		}
	}
	return s
}

// apiSweepStarted is the answer of start-sweep.
type apiSweepStarted struct {
	SweepID string   `json:"sweep_id"`
	Models  []string `json:"models" doc:"The models, in the order their runs go."`
}

// apiSweep is the answer of get-sweep.
type apiSweep struct {
	SweepID string   `json:"sweep_id"`
	Status  string   `json:"status" enum:"running,completed,stopped" doc:"completed: every model had its run (each run's own status says how it ended). stopped: stop-run or reset-engine ended the sweep, a run was reset, or a run could not start (see error)."`
	Models  []string `json:"models" doc:"The models, in order."`
	RunIDs  []string `json:"run_ids" doc:"The runs started so far, in the order of models: run_ids[i] is the run of models[i]."`
	Current *string  `json:"current" doc:"The model whose run is in progress; null once the sweep is over."`
	Error   string   `json:"error,omitempty" doc:"Why the sweep stopped, when a run could not start."`
}

type sweepStartInput struct {
	Body apiSweepStart
}

type sweepStartedOutput struct {
	Body apiSweepStarted
}

type sweepOutput struct {
	Body apiSweep
}

type sweepHandler struct {
	problems
	sweeps *sweeper
}

// registerSweep registers start-sweep and get-sweep.
func registerSweep(api huma.API, s *sweeper, log *slog.Logger) {
	h := &sweepHandler{problems{log}, s}
	tags := []string{tagEvaluation}
	register(api, huma.Operation{
		OperationID: "start-sweep", Method: http.MethodPost, Path: "/api/sweep",
		Summary: "Run the same evaluation for several models", Tags: tags, DefaultStatus: http.StatusAccepted,
		Description: "Starts one run per model, one after another in the order given, in the background; each is an ordinary run " +
			"labelled by its model, with the other fields of the body (domains, repeats, params, timeout_s, retries) applying to every run. " +
			"The body is checked before the first run starts, as start-run checks it; model and model_name must be left out. " +
			"409 while a run or a sweep is active; while a sweep is active start-run, resume-run and rescore-run are 409 too, " +
			"and stop-run (or reset-engine) ends the current run and the rest of the sweep. " +
			"get-sweep follows it. A sweep is kept in memory only: a server that stops ends it, and the runs it finished stay.",
		Errors: []int{http.StatusConflict, http.StatusUnprocessableEntity},
	}, h.start)
	register(api, huma.Operation{
		OperationID: "get-sweep", Method: http.MethodGet, Path: "/api/sweep",
		Summary: "The current or last sweep", Tags: tags,
		Description: "Its status, its models and the runs started so far in model order. 404 when no sweep was started since the server started.",
		Errors:      []int{http.StatusNotFound},
	}, h.get)
}

func (h *sweepHandler) start(ctx context.Context, in *sweepStartInput) (*sweepStartedOutput, error) {
	b := &in.Body
	models, err := checkSweep(b)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	sw, err := h.sweeps.startSweep(context.WithoutCancel(ctx), b.startRequest(), models) // the sweep outlives the request
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &sweepStartedOutput{Body: apiSweepStarted{SweepID: sw.id, Models: models}}, nil
}

func (h *sweepHandler) get(context.Context, *struct{}) (*sweepOutput, error) {
	sw, ok := h.sweeps.snapshot()
	if !ok {
		return nil, huma.Error404NotFound("no sweep was started since the server started")
	}
	return &sweepOutput{Body: sw}, nil
}

// checkSweep checks what a sweep adds to the start body and returns the
// models, trimmed.
func checkSweep(b *apiSweepStart) ([]string, error) {
	ve := &harness.ValidationError{}
	if b.Model != "" {
		ve.Add("model", "a sweep sets each run's model from models; leave model out")
	}
	if b.ModelName != "" {
		ve.Add("model_name", "a sweep labels each run by its model; leave model_name out")
	}
	if b.AgentID != "" {
		ve.Add("agent_id", "a sweep runs the bare models of models; an agent decides its own model, so evaluate it with POST /api/start")
	}
	if len(b.Models) == 0 {
		ve.Add("models", "is required: %d to %d models", MinSweepModels, MaxSweepModels)
	}
	models := make([]string, len(b.Models))
	seen := map[string]int{}
	for i, m := range b.Models {
		m = strings.TrimSpace(m)
		models[i] = m
		field := fmt.Sprintf("models[%d]", i)
		switch j, dup := seen[m]; {
		case m == "":
			ve.Add(field, "is empty")
		case len(m) > maxModelName:
			ve.Add(field, "is longer than %d bytes", maxModelName)
		case strings.ContainsFunc(m, unicode.IsControl):
			ve.Add(field, "holds a control character")
		case dup:
			ve.Add(field, "repeats models[%d] (%s): each model runs once", j, m)
		default:
			seen[m] = i
		}
	}
	return models, ve.Err()
}
