package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/internal/shim"
)

// The shims registered for plugins: each satisfies the harness interface
// of its kind and every optional one, and forwards to the plugin, which is
// started on the first call.

// unavailable reports an error that says nothing about the input: the
// plugin could not be reached or did not answer in time.
func unavailable(err error) bool {
	return errors.Is(err, plugin.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// evaluator is an evaluator plugin as a harness.Evaluator.
type evaluator struct{ p *proc }

var (
	_ harness.Evaluator       = (*evaluator)(nil)
	_ harness.ConfigValidator = (*evaluator)(nil)
	_ harness.ConfigSecrets   = (*evaluator)(nil)
)

// SecretFields is what the plugin declares (see proc.secretFields).
func (e *evaluator) SecretFields() []string { return e.p.secretFields() }

func (e *evaluator) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, fmt.Errorf("evaluate: nil request: %w", harness.ErrInvalid)
	}
	var res *harness.EvalResult
	err := e.p.call(ctx, "evaluate", maxRestartWait, func(ctx context.Context, inst *instance) (err error) {
		res, err = inst.ev.Evaluate(ctx, req)
		return err
	})
	return res, err
}

// ValidateConfig has the plugin check an evaluator record, when its
// evaluator implements harness.ConfigValidator. A plugin that cannot be
// reached does not make the record invalid: the failure is logged and the
// record accepted, and the run's calls will report it. It never waits for
// a restart's backoff, so that loading many records of a broken plugin's
// type tries to start it once.
func (e *evaluator) ValidateConfig(cfg harness.EvaluatorConfig) error {
	err := e.p.call(e.p.m.ctx, "validate config", 0, func(ctx context.Context, inst *instance) error {
		if !inst.info.Has(plugin.CapValidateConfig) {
			return nil
		}
		err := inst.ev.ValidateConfig(ctx, cfg)
		if errors.Is(err, shim.ErrUnimplemented) {
			return nil
		}
		return err
	})
	return e.p.validation(err)
}

// validation passes on a ValidateConfig error unless it is the plugin's
// unavailability.
func (p *proc) validation(err error) error {
	if err != nil && unavailable(err) {
		p.m.log.Warn("plugins: could not validate a config; accepted unchecked", slog.String("plugin", p.file), slog.Any("error", err))
		return nil
	}
	return err
}

// channel is a channel plugin as a harness.Channel.
type channel struct{ p *proc }

var (
	_ harness.Channel                = (*channel)(nil)
	_ harness.ChannelConfigValidator = (*channel)(nil)
	_ harness.Receiver               = (*channel)(nil)
	_ harness.ConfigSecrets          = (*channel)(nil)
)

// SecretFields is what the plugin declares (see proc.secretFields).
func (c *channel) SecretFields() []string { return c.p.secretFields() }

// Run runs the channel in the plugin. Cancelling ctx stops it: the plugin
// is asked to stop, given Options.StopGrace, and Run returns nil. A plugin
// that crashes makes Run return an error wrapping plugin.ErrUnavailable;
// the next Run restarts it.
func (c *channel) Run(ctx context.Context, run *harness.ChannelRun) error {
	if run == nil {
		return fmt.Errorf("run: nil channel run: %w", harness.ErrInvalid)
	}
	inst, err := c.p.get(ctx, maxRestartWait)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	err = inst.ch.Run(ctx, run, c.p.m.opts.StopGrace)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	_, err = c.p.failed(ctx, ctx, inst, "run", err)
	return err
}

func (c *channel) ValidateChannelConfig(config map[string]any) error {
	err := c.p.call(c.p.m.ctx, "validate config", 0, func(ctx context.Context, inst *instance) error {
		if !inst.info.Has(plugin.CapValidateConfig) {
			return nil
		}
		err := inst.ch.ValidateConfig(ctx, config)
		if errors.Is(err, shim.ErrUnimplemented) {
			return nil
		}
		return err
	})
	return c.p.validation(err)
}

// errNotReceiver is Receive's error for a plugin whose channel is not a
// harness.Receiver.
func (c *channel) errNotReceiver() error {
	return fmt.Errorf("channel plugin %s does not receive pushed requests: %w", c.p.file, harness.ErrInvalid)
}

func (c *channel) Receive(ctx context.Context, run *harness.ChannelRun, req *harness.InboundRequest) (*harness.InboundResponse, error) {
	if run == nil || req == nil {
		return nil, fmt.Errorf("receive: nil run or request: %w", harness.ErrInvalid)
	}
	var resp *harness.InboundResponse
	err := c.p.call(ctx, "receive", maxRestartWait, func(ctx context.Context, inst *instance) (err error) {
		if !inst.info.Has(plugin.CapReceive) {
			return c.errNotReceiver()
		}
		resp, err = inst.ch.Receive(ctx, run, req)
		if errors.Is(err, shim.ErrUnimplemented) {
			return c.errNotReceiver()
		}
		return err
	})
	return resp, err
}

// tool is a tool plugin as a harness.Tool.
type tool struct{ p *proc }

var (
	_ harness.Tool          = (*tool)(nil)
	_ harness.ConfigSecrets = (*tool)(nil)
)

// SecretFields is what the plugin declares (see proc.secretFields).
func (t *tool) SecretFields() []string { return t.p.secretFields() }

// Definition is the plugin's definition once it has started; before, only
// the name (from the file name) is known.
func (t *tool) Definition() harness.FunctionDef {
	t.p.mu.Lock()
	defer t.p.mu.Unlock()
	if t.p.info != nil && t.p.info.Tool != nil {
		return *t.p.info.Tool
	}
	return harness.FunctionDef{Name: t.p.typ}
}

// Call calls the plugin's tool. A call retried after a crash sends req
// again: the same CallID, arguments and ids.
func (t *tool) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	if req == nil {
		return nil, fmt.Errorf("call: nil request: %w", harness.ErrInvalid)
	}
	var res *harness.ToolResult
	err := t.p.call(ctx, "call", maxRestartWait, func(ctx context.Context, inst *instance) (err error) {
		res, err = inst.tool.Call(ctx, req)
		return err
	})
	return res, err
}

// secretFields returns the config keys the plugin declares secret, from
// its Info. A plugin that has never started is started to learn them:
// whoever asks is about to show or log a record of its type, and must not
// guess. nil — the plugin declares nothing, or cannot be started (logged)
// — leaves the caller to its default rule.
func (p *proc) secretFields() []string {
	p.mu.Lock()
	info := p.info
	p.mu.Unlock()
	if info != nil {
		return info.SecretFields
	}
	ctx, cancel := context.WithTimeout(p.m.ctx, p.m.opts.StartTimeout)
	defer cancel()
	inst, err := p.get(ctx, 0)
	if err != nil {
		p.m.log.Warn("plugins: could not start the plugin to learn its secret config keys; the default rule applies",
			slog.String("plugin", p.file), slog.Any("error", err))
		return nil
	}
	return inst.info.SecretFields
}
