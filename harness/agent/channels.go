package agent

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// stopGrace is how long a stopping channel's Run gets to return after its
// context is cancelled before it is left behind.
const stopGrace = 10 * time.Second

// Desired channel states, stored so that Resume knows what to start.
const (
	desiredRunning = "running"
	desiredStopped = "stopped"
)

var errClosed = errors.New("agent service is closed")

// Supervisor runs the channels of agents: their records (stored in the
// database, configs masked in every record it returns), and for each
// channel started a goroutine that runs its implementation and restarts
// it with exponential backoff after failures, persisting its status. It
// is safe for concurrent use. The agent service makes one (see
// Service.Supervisor); Close stops every channel.
//
// The Supervisor is a type of this package rather than a package of its
// own because channel records share the agent tables' schema and the
// masking rules of the agent API (Mask, MaskConfig), and because the
// channels it runs chat with the agents of the same service.
type Supervisor struct {
	db        *bun.DB
	reg       *harness.Registry
	log       *slog.Logger
	retryBase time.Duration
	retryMax  time.Duration
	// host returns what a channel calls back into, given its record.
	host func(rec harness.ChannelConfig) harness.ChannelHost

	ops     sync.Mutex // serialises channel state changes
	mu      sync.Mutex // guards runners and closed
	runners map[string]*runner
	closed  bool
	wg      sync.WaitGroup
}

// runner is a running channel: its supervisor goroutine, which restarts
// its Run with backoff after failures.
type runner struct {
	id     string
	run    *harness.ChannelRun
	cancel context.CancelFunc
	done   chan struct{}
}

func newSupervisor(db *bun.DB, reg *harness.Registry, log *slog.Logger, retryBase, retryMax time.Duration,
	host func(rec harness.ChannelConfig) harness.ChannelHost) *Supervisor {
	return &Supervisor{db: db, reg: reg, log: log, retryBase: retryBase, retryMax: retryMax, host: host,
		runners: map[string]*runner{}}
}

// removeAgent stops the channels of an agent and then runs del, which
// deletes the agent and its rows, while no channel can be started.
func (sv *Supervisor) removeAgent(ctx context.Context, agentID string, del func() error) error {
	sv.ops.Lock()
	defer sv.ops.Unlock()
	rows, err := sv.rows(ctx, agentID)
	if err != nil {
		return err
	}
	for _, c := range rows {
		sv.stopRunner(c.ID)
	}
	return del()
}

// host is what a running channel calls back into: the agent service's
// chat with the channel's agent, through the channel.
type host struct {
	s       *Service
	agentID string
	channel channelRef
}

var _ harness.ChannelHost = (*host)(nil)

// Chat sends a user's message to the channel's agent. The messages of the
// turn are stored with the channel's type and id.
func (h *host) Chat(ctx context.Context, msg *harness.InboundMessage) (*harness.Reply, error) {
	if msg == nil {
		return nil, harness.Invalid("message", "is required")
	}
	res, err := h.s.chat(ctx, h.agentID, msg.UserID, msg.Text, h.channel)
	if err != nil {
		return nil, err
	}
	return &harness.Reply{Text: res.Response, Sources: res.Sources}, nil
}

// Clear forgets a user's conversation with the channel's agent.
func (h *host) Clear(ctx context.Context, userID string) error {
	return h.s.Clear(ctx, h.agentID, userID)
}

func (sv *Supervisor) rows(ctx context.Context, agentID string) ([]channelRow, error) {
	var rows []channelRow
	err := sv.db.NewSelect().Model(&rows).Where("agent_id = ?", agentID).Order("created_at", "id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list channels of agent %s: %w", agentID, err)
	}
	return rows, nil
}

func (sv *Supervisor) records(ctx context.Context, agentID string) ([]harness.ChannelConfig, error) {
	rows, err := sv.rows(ctx, agentID)
	if err != nil {
		return nil, err
	}
	out := make([]harness.ChannelConfig, len(rows))
	for i := range rows {
		out[i] = sv.masked(rows[i].record())
	}
	return out, nil
}

// load returns a channel's row; agentID "" matches any agent.
func (sv *Supervisor) load(ctx context.Context, db bun.IDB, agentID, channelID string) (*channelRow, error) {
	var row channelRow
	q := db.NewSelect().Model(&row).Where("id = ?", channelID)
	if agentID != "" {
		q = q.Where("agent_id = ?", agentID)
	}
	err := q.Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, notFound("channel", channelID)
	case err != nil:
		return nil, fmt.Errorf("load channel %s: %w", channelID, err)
	}
	return &row, nil
}

func (sv *Supervisor) loadMasked(ctx context.Context, agentID, channelID string) (harness.ChannelConfig, error) {
	row, err := sv.load(ctx, sv.db, agentID, channelID)
	if err != nil {
		return harness.ChannelConfig{}, err
	}
	return sv.masked(row.record()), nil
}

// List lists an agent's channels, oldest first, configs masked. An
// unknown agent gives harness.ErrNotFound.
func (sv *Supervisor) List(ctx context.Context, agentID string) ([]harness.ChannelConfig, error) {
	if _, err := loadAgent(ctx, sv.db, agentID); err != nil {
		return nil, err
	}
	return sv.records(ctx, agentID)
}

// Get returns one channel of an agent, config masked.
func (sv *Supervisor) Get(ctx context.Context, agentID, channelID string) (harness.ChannelConfig, error) {
	if _, err := loadAgent(ctx, sv.db, agentID); err != nil {
		return harness.ChannelConfig{}, err
	}
	return sv.loadMasked(ctx, agentID, channelID)
}

func newChannelID() string {
	var b [6]byte
	rand.Read(b[:])
	return "ch_" + hex.EncodeToString(b[:])
}

// checkChannel validates a channel record about to be stored: its name
// and config hold no NUL or invalid UTF-8, its type must be registered, and the implementation's ChannelConfigValidator, if
// any, must accept its config.
func (sv *Supervisor) check(ve *harness.ValidationError, c *harness.ChannelConfig) {
	if c.Name == "" {
		c.Name = c.Type
	}
	if c.Config == nil {
		c.Config = map[string]any{}
	}
	harness.CheckText(ve, "name", c.Name)
	harness.CheckName(ve, "name", c.Name)
	harness.CheckText(ve, "config", c.Config)
	impl, ok := sv.reg.Channel(c.Type)
	switch {
	case c.Type == "":
		ve.Add("type", "is required")
	case !ok:
		ve.Add("type", "unknown channel type %q (known: %s)", c.Type, strings.Join(sv.reg.ChannelTypes(), ", "))
	}
	if v, isValidator := impl.(harness.ChannelConfigValidator); ok && isValidator {
		mergeConfigErrors(ve, v.ValidateChannelConfig(c.Config))
	}
}

// mergeConfigErrors adds a channel validator's errors under "config". A
// validator may name its fields relative to the config ("bot_token") or
// from the record ("config.bot_token", as channels/telegram and
// channels/webhook do); both end up as "config.bot_token".
func mergeConfigErrors(ve *harness.ValidationError, err error) {
	var cve *harness.ValidationError
	if !errors.As(err, &cve) {
		ve.Merge("config", err)
		return
	}
	for _, f := range cve.Fields {
		if f.Field == "config" || strings.HasPrefix(f.Field, "config.") {
			ve.Fields = append(ve.Fields, f)
			continue
		}
		ve.Merge("config", &harness.ValidationError{Fields: []harness.FieldError{f}})
	}
}

// Create adds a stopped channel to an agent. The type must be
// registered in the Registry (else harness.ErrInvalid naming "type"); an
// empty id is generated, a given one must be valid (harness.ValidID) and
// unused (harness.ErrConflict). An empty name becomes the type. The record
// is returned with its config masked.
func (sv *Supervisor) Create(ctx context.Context, agentID string, c harness.ChannelConfig) (harness.ChannelConfig, error) {
	if _, err := loadAgent(ctx, sv.db, agentID); err != nil {
		return harness.ChannelConfig{}, err
	}
	ve := &harness.ValidationError{}
	switch {
	case c.ID == "":
		c.ID = newChannelID()
	case !harness.ValidID(c.ID):
		ve.Add("id", "must match ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
	}
	if c.AgentID != "" && c.AgentID != agentID {
		ve.Add("agent_id", "must be the agent of the path (%q)", agentID)
	}
	c.AgentID = agentID
	c.Config = cloneConfig(c.Config)
	checkNoMask(ve, "config", c.Config)
	sv.check(ve, &c)
	if err := ve.Err(); err != nil {
		return harness.ChannelConfig{}, fmt.Errorf("create channel: %w", err)
	}
	c.Status, c.LastError, c.CreatedAt = harness.ChannelStopped, "", now()
	err := sv.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*channelRow)(nil)).Where("id = ?", c.ID).Count(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("channel %q already exists: %w", c.ID, harness.ErrConflict)
		}
		_, err = tx.NewInsert().Model(toChannelRow(c, desiredStopped)).Exec(ctx)
		return err
	})
	if err != nil {
		return harness.ChannelConfig{}, fmt.Errorf("create channel: %w", err)
	}
	return sv.masked(c), nil
}

// cloneConfig copies a config deeply enough that masking and unmasking
// never touch the caller's maps.
func cloneConfig(cfg map[string]any) map[string]any {
	if cfg == nil {
		return map[string]any{}
	}
	out := maps.Clone(cfg)
	for k, v := range out {
		if m, ok := v.(map[string]any); ok {
			out[k] = cloneConfig(m)
		}
	}
	return out
}

// Update changes a channel: apply edits a copy of the record, its
// config masked. A config value equal to Mask keeps the stored value,
// unless the update changes where the channel sends its secrets (a key
// whose name contains "url", such as api_url or callback_url, changes, is
// added or is removed): then a Mask anywhere in the config is
// harness.ErrInvalid naming the field, and the secret must be sent again
// in clear, so that a stored secret never follows a new address unasked. The
// id and agent cannot change (harness.ErrInvalid); status, last_error and
// created_at are kept. A running channel is restarted with the new record.
// The record is returned with its config masked.
func (sv *Supervisor) Update(ctx context.Context, agentID, channelID string, apply func(*harness.ChannelConfig) error) (harness.ChannelConfig, error) {
	sv.ops.Lock()
	defer sv.ops.Unlock()
	row, err := sv.load(ctx, sv.db, agentID, channelID)
	if err != nil {
		return harness.ChannelConfig{}, err
	}
	old := row.record()
	c := sv.masked(old)
	if err := apply(&c); err != nil {
		return harness.ChannelConfig{}, err
	}
	ve := &harness.ValidationError{}
	if c.ID != channelID {
		ve.Add("id", "cannot be changed (is %q)", channelID)
	}
	if c.AgentID != agentID {
		ve.Add("agent_id", "cannot be changed (is %q)", agentID)
	}
	c.Config = cloneConfig(c.Config)
	restoreURLs(ve, "config", c.Config, old.Config)
	checkSecretsStay(ve, c.Config, old.Config)
	unmask(ve, "config", c.Config, old.Config)
	sv.check(ve, &c)
	if err := ve.Err(); err != nil {
		return harness.ChannelConfig{}, fmt.Errorf("update channel %s: %w", channelID, err)
	}
	c.ID, c.AgentID, c.Status, c.LastError, c.CreatedAt = channelID, agentID, old.Status, old.LastError, old.CreatedAt
	_, err = sv.db.NewUpdate().Model(toChannelRow(c, row.Desired)).Column("type", "name", "config").WherePK().Exec(ctx)
	if err != nil {
		return harness.ChannelConfig{}, fmt.Errorf("update channel %s: %w", channelID, err)
	}
	sv.mu.Lock()
	_, running := sv.runners[channelID]
	sv.mu.Unlock()
	if running {
		sv.stopRunner(channelID)
		if err := sv.start(ctx, channelID); err != nil {
			return harness.ChannelConfig{}, fmt.Errorf("restart channel %s: %w", channelID, err)
		}
	}
	return sv.loadMasked(ctx, agentID, channelID)
}

// checkSecretsStay refuses Mask values in an updated config that changes
// one of its URLs: a stored secret is only kept for the address it was
// given for.
func checkSecretsStay(ve *harness.ValidationError, cfg, stored map[string]any) {
	changed := changedURLs("config", cfg, stored)
	if len(changed) == 0 {
		return
	}
	for _, field := range maskedFields("config", cfg) {
		ve.Add(field, "is the mask %q, but %s changes: send the secret again in clear", Mask, strings.Join(changed, ", "))
	}
}

// isURLKey reports whether a config key holds an address: its name
// contains "url", in any case.
func isURLKey(k string) bool { return strings.Contains(strings.ToLower(k), "url") }

// changedURLs lists, sorted, the paths of the URL keys whose value differs
// between cfg and stored, nested objects included; a URL key present on
// one side only counts as changed.
func changedURLs(path string, cfg, stored map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keyUnion(cfg, stored))) {
		field := path + "." + k
		nv, inNew := cfg[k]
		ov, inOld := stored[k]
		if isURLKey(k) {
			if inNew != inOld || !reflect.DeepEqual(nv, ov) {
				out = append(out, field)
			}
			continue
		}
		nm, _ := nv.(map[string]any)
		om, _ := ov.(map[string]any)
		if nm != nil || om != nil {
			out = append(out, changedURLs(field, nm, om)...)
		}
	}
	return out
}

func keyUnion(a, b map[string]any) map[string]struct{} {
	out := make(map[string]struct{}, len(a)+len(b))
	for k := range a {
		out[k] = struct{}{}
	}
	for k := range b {
		out[k] = struct{}{}
	}
	return out
}

// maskedFields lists, sorted, the paths of the values of cfg equal to
// Mask, nested objects included.
func maskedFields(path string, cfg map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		switch v := cfg[k].(type) {
		case string:
			if v == Mask {
				out = append(out, path+"."+k)
			}
		case map[string]any:
			out = append(out, maskedFields(path+"."+k, v)...)
		}
	}
	return out
}

// Delete stops a channel and removes it.
func (sv *Supervisor) Delete(ctx context.Context, agentID, channelID string) error {
	sv.ops.Lock()
	defer sv.ops.Unlock()
	if _, err := sv.load(ctx, sv.db, agentID, channelID); err != nil {
		return err
	}
	sv.stopRunner(channelID)
	if _, err := sv.db.NewDelete().Model((*channelRow)(nil)).Where("id = ?", channelID).Exec(ctx); err != nil {
		return fmt.Errorf("delete channel %s: %w", channelID, err)
	}
	return nil
}

// Start starts a channel: its implementation's Run, in a goroutine,
// restarted with exponential backoff (Options.RetryBaseDelay doubling up to
// RetryMaxDelay) after each failure, which sets status error and
// last_error, until the channel is stopped. The desired state is stored,
// so Resume starts it again after a restart. Starting a running channel
// does nothing. A type no longer registered gives harness.ErrInvalid
// naming "type", and status error.
func (sv *Supervisor) Start(ctx context.Context, agentID, channelID string) (harness.ChannelConfig, error) {
	sv.ops.Lock()
	defer sv.ops.Unlock()
	if _, err := sv.load(ctx, sv.db, agentID, channelID); err != nil {
		return harness.ChannelConfig{}, err
	}
	if err := sv.start(ctx, channelID); err != nil {
		return harness.ChannelConfig{}, fmt.Errorf("start channel %s: %w", channelID, err)
	}
	return sv.loadMasked(ctx, agentID, channelID)
}

// start starts a channel unless it runs. Callers hold chOps.
func (sv *Supervisor) start(ctx context.Context, channelID string) error {
	sv.mu.Lock()
	_, running := sv.runners[channelID]
	closed := sv.closed
	sv.mu.Unlock()
	if closed {
		return errClosed
	}
	if running {
		_, err := sv.db.NewUpdate().Model((*channelRow)(nil)).Set("desired = ?", desiredRunning).Where("id = ?", channelID).Exec(ctx)
		return err
	}
	row, err := sv.load(ctx, sv.db, "", channelID)
	if err != nil {
		return err
	}
	impl, ok := sv.reg.Channel(row.Type)
	if !ok {
		msg := fmt.Sprintf("channel type %q is not available", row.Type)
		_, err := sv.db.NewUpdate().Model((*channelRow)(nil)).Set("desired = ?", desiredRunning).
			Set("status = ?", string(harness.ChannelError)).Set("last_error = ?", msg).Where("id = ?", channelID).Exec(ctx)
		if err != nil {
			return err
		}
		return harness.Invalid("type", "%s", msg)
	}
	_, err = sv.db.NewUpdate().Model((*channelRow)(nil)).Set("desired = ?", desiredRunning).
		Set("status = ?", string(harness.ChannelRunning)).Set("last_error = ''").Where("id = ?", channelID).Exec(ctx)
	if err != nil {
		return err
	}
	rec := row.record()
	rec.Status, rec.LastError = harness.ChannelRunning, ""
	var agentName string
	if a, err := loadAgent(ctx, sv.db, rec.AgentID); err == nil {
		agentName = a.Name
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &runner{
		id:     channelID,
		run:    &harness.ChannelRun{Channel: rec, Host: sv.host(rec), AgentName: agentName},
		cancel: cancel,
		done:   make(chan struct{}),
	}
	sv.mu.Lock()
	if sv.closed {
		sv.mu.Unlock()
		cancel()
		return errClosed
	}
	sv.runners[channelID] = r
	sv.wg.Add(1)
	sv.mu.Unlock()
	sv.log.Info("channel started", slog.String("channel", channelID), slog.String("type", rec.Type), slog.String("agent", rec.AgentID))
	go sv.supervise(rctx, r, impl)
	return nil
}

// Stop stops a channel and waits for its Run to return (up to ten
// seconds); its status becomes stopped and its desired state stopped.
// Stopping a stopped channel does nothing.
func (sv *Supervisor) Stop(ctx context.Context, agentID, channelID string) (harness.ChannelConfig, error) {
	sv.ops.Lock()
	defer sv.ops.Unlock()
	if _, err := sv.load(ctx, sv.db, agentID, channelID); err != nil {
		return harness.ChannelConfig{}, err
	}
	_, err := sv.db.NewUpdate().Model((*channelRow)(nil)).Set("desired = ?", desiredStopped).Where("id = ?", channelID).Exec(ctx)
	if err != nil {
		return harness.ChannelConfig{}, fmt.Errorf("stop channel %s: %w", channelID, err)
	}
	if !sv.stopRunner(channelID) {
		sv.persistStatus(ctx, channelID, harness.ChannelStopped, nil)
	}
	return sv.loadMasked(ctx, agentID, channelID)
}

// stopRunner stops a channel's supervisor, if it runs, waits for it and
// records the channel stopped. It reports whether one was running.
func (sv *Supervisor) stopRunner(channelID string) bool {
	sv.mu.Lock()
	r := sv.runners[channelID]
	delete(sv.runners, channelID)
	sv.mu.Unlock()
	if r == nil {
		return false
	}
	r.cancel()
	<-r.done // the supervisor returns at most stopGrace after the cancel
	sv.persistStatus(context.Background(), channelID, harness.ChannelStopped, nil)
	sv.log.Info("channel stopped", slog.String("channel", channelID))
	return true
}

func (sv *Supervisor) persistStatus(ctx context.Context, channelID string, st harness.ChannelStatus, lastErr *string) {
	q := sv.db.NewUpdate().Model((*channelRow)(nil)).Set("status = ?", string(st)).Where("id = ?", channelID)
	if lastErr != nil {
		// A channel's error may quote anything; bun writes it as a literal,
		// which holds neither NUL nor (on PostgreSQL) bytes that are not
		// UTF-8.
		q = q.Set("last_error = ?", strings.ReplaceAll(strings.ToValidUTF8(*lastErr, "\uFFFD"), "\x00", "\uFFFD"))
	}
	if _, err := q.Exec(ctx); err != nil {
		sv.log.Error("save channel status", slog.String("channel", channelID), slog.Any("error", err))
	}
}

// setStatus records a status change seen by a supervisor, unless its
// channel was stopped meanwhile (the stopper records that).
func (sv *Supervisor) setStatus(r *runner, st harness.ChannelStatus, lastErr *string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.runners[r.id] != r {
		return
	}
	sv.persistStatus(context.Background(), r.id, st, lastErr)
}

// supervise runs a channel until it is stopped: each failure is recorded
// (status error, last_error with the config's secrets redacted) and the
// Run restarted after a backoff delay. After a failure, the status goes
// back to running once a restarted Run has lasted RetryBaseDelay; the
// delay starts again from RetryBaseDelay once a Run has lasted
// RetryMaxDelay. A Run returning nil when not asked to stop ends the
// channel: status and desired state stopped.
func (sv *Supervisor) supervise(ctx context.Context, r *runner, impl harness.Channel) {
	defer sv.wg.Done()
	defer close(r.done)
	rec := r.run.Channel
	secrets := secretValues(rec.Config, sv.channelSecrets(rec.Type))
	log := sv.log.With(slog.String("channel", rec.ID), slog.String("type", rec.Type), slog.String("agent", rec.AgentID))
	delay := sv.retryBase
	failures := 0
	for {
		started := time.Now()
		errc := make(chan error, 1)
		go func() { errc <- runChannel(ctx, impl, r.run) }()
		var healthy <-chan time.Time
		var timer *time.Timer
		if failures > 0 {
			timer = time.NewTimer(sv.retryBase)
			healthy = timer.C
		}
		var err error
	wait:
		for {
			select {
			case <-healthy:
				healthy = nil
				sv.setStatus(r, harness.ChannelRunning, nil)
			case err = <-errc:
				break wait
			case <-ctx.Done():
				select {
				case <-errc:
				case <-time.After(stopGrace):
					log.Warn("channel did not stop in time; left behind")
				}
				if timer != nil {
					timer.Stop()
				}
				return
			}
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			log.Info("channel ended")
			sv.mu.Lock()
			if sv.runners[r.id] == r {
				delete(sv.runners, r.id)
				if _, err := sv.db.NewUpdate().Model((*channelRow)(nil)).Set("status = ?", string(harness.ChannelStopped)).
					Set("desired = ?", desiredStopped).Where("id = ?", r.id).Exec(context.Background()); err != nil {
					log.Error("save channel status", slog.Any("error", err))
				}
			}
			sv.mu.Unlock()
			return
		}
		failures++
		if time.Since(started) >= sv.retryMax {
			delay = sv.retryBase
		}
		msg := redact(err.Error(), secrets)
		log.Warn("channel failed; retrying", slog.String("error", msg), slog.Duration("retry_in", delay))
		sv.setStatus(r, harness.ChannelError, &msg)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(delay*2, sv.retryMax)
	}
}

// runChannel runs a channel, turning a panic into an error.
func runChannel(ctx context.Context, impl harness.Channel, run *harness.ChannelRun) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("channel panicked: %v", p)
		}
	}()
	return impl.Run(ctx, run)
}

// ErrNotReceiving is matched by the error of Inbound when no running
// channel with the id takes pushed requests, whichever the reason: a
// caller that must not tell them apart (an unauthenticated client could
// probe ids) tests for it alone.
var ErrNotReceiving = errors.New("no running channel with this id receives pushed requests")

// notReceiving is an error of Inbound that also matches ErrNotReceiving.
type notReceiving struct{ error }

func (e notReceiving) Unwrap() error        { return e.error }
func (e notReceiving) Is(target error) bool { return target == ErrNotReceiving }

// Inbound delivers an HTTP request pushed to a channel (POST
// /api/channels/{id}/webhook) to its implementation's Receive. An unknown
// channel gives harness.ErrNotFound, a channel not running
// harness.ErrConflict, an implementation that is not a harness.Receiver
// harness.ErrInvalid; each of the three also matches ErrNotReceiving.
func (sv *Supervisor) Inbound(ctx context.Context, channelID string, req *harness.InboundRequest) (*harness.InboundResponse, error) {
	sv.mu.Lock()
	r := sv.runners[channelID]
	sv.mu.Unlock()
	if r == nil {
		if _, err := sv.load(ctx, sv.db, "", channelID); err != nil {
			if errors.Is(err, harness.ErrNotFound) {
				err = notReceiving{err}
			}
			return nil, err
		}
		return nil, notReceiving{fmt.Errorf("channel %q is not running: %w", channelID, harness.ErrConflict)}
	}
	impl, ok := sv.reg.Channel(r.run.Channel.Type)
	recv, isReceiver := impl.(harness.Receiver)
	if !ok || !isReceiver {
		return nil, notReceiving{fmt.Errorf("channel %q (type %s) does not receive pushed requests: %w", channelID, r.run.Channel.Type, harness.ErrInvalid)}
	}
	if req == nil {
		req = &harness.InboundRequest{}
	}
	return recv.Receive(ctx, r.run, req)
}

// Resume starts every channel whose desired state is running: those that
// were running when the process stopped. A channel that fails to start is
// logged and recorded (status error); only a database failure makes
// Resume fail.
func (sv *Supervisor) Resume(ctx context.Context) error {
	var rows []channelRow
	if err := sv.db.NewSelect().Model(&rows).Where("desired = ?", desiredRunning).Order("created_at", "id").Scan(ctx); err != nil {
		return fmt.Errorf("resume channels: %w", err)
	}
	sv.ops.Lock()
	defer sv.ops.Unlock()
	for _, row := range rows {
		if err := sv.start(ctx, row.ID); err != nil {
			if errors.Is(err, errClosed) {
				return fmt.Errorf("resume channels: %w", err)
			}
			sv.log.Warn("channel not resumed", slog.String("channel", row.ID), slog.String("type", row.Type), slog.Any("error", err))
		}
	}
	return nil
}

// Close stops every channel and waits for them; their desired states are
// kept, so that Resume starts them again in the next process. Close does
// not close the database. After Close, channels cannot be started.
func (sv *Supervisor) Close() {
	sv.mu.Lock()
	sv.closed = true
	rs := make([]*runner, 0, len(sv.runners))
	for _, r := range sv.runners {
		rs = append(rs, r)
	}
	clear(sv.runners)
	sv.mu.Unlock()
	for _, r := range rs {
		r.cancel()
	}
	sv.wg.Wait()
	for _, r := range rs {
		sv.persistStatus(context.Background(), r.id, harness.ChannelStopped, nil)
	}
}
