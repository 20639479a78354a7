package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

// declaringChannel declares its secret config keys; each run fails with
// an error that quotes its whole config.
type declaringChannel struct{ fields []string }

var _ harness.ConfigSecrets = declaringChannel{}

func (c declaringChannel) SecretFields() []string { return c.fields }

func (c declaringChannel) Run(ctx context.Context, run *harness.ChannelRun) error {
	return fmt.Errorf("refused with config %v", run.Channel.Config)
}

// A type that declares its secret keys has exactly those masked: keys that
// merely look secret ("keywords", "monkey_mode") are shown, a declared key
// that does not ("dsn", a nested "auth.password") is hidden, and the mask
// sent back keeps the stored value. A type that declares nothing (nil)
// keeps the default rule; one that declares an empty list has no secrets.
func TestDeclaredSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for typ, fields := range map[string][]string{
		"declares": {"api_key", "dsn", "auth.password"},
		"silent":   nil,
		"none":     {},
	} {
		if err := e.reg.RegisterChannel(typ, declaringChannel{fields: fields}); err != nil {
			t.Fatal(err)
		}
	}
	e.createAgent("a", "")
	ctx := e.ctx
	config := func() map[string]any {
		return map[string]any{
			"api_key": "AK-1", "keywords": []any{"blue", "red"}, "monkey_mode": true, "dsn": "postgres://u:pw@h/db",
			"auth": map[string]any{"password": "PW-1", "user": "bob", "token_hint": "th"},
		}
	}

	c, err := e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{Type: "declares", Config: config()})
	if err != nil {
		t.Fatal(err)
	}
	got := c.Config
	auth, _ := got["auth"].(map[string]any)
	if got["api_key"] != agent.Mask || got["dsn"] != agent.Mask || auth["password"] != agent.Mask ||
		got["monkey_mode"] != true || fmt.Sprint(got["keywords"]) != "[blue red]" || auth["user"] != "bob" || auth["token_hint"] != "th" {
		t.Errorf("declared: %v", got)
	}

	// The mask sent back keeps the stored values.
	u, err := e.svc.Supervisor().Update(ctx, "a", c.ID, func(x *harness.ChannelConfig) error {
		x.Config["keywords"] = []any{"green"}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Config["api_key"] != agent.Mask || fmt.Sprint(u.Config["keywords"]) != "[green]" {
		t.Errorf("updated: %v", u.Config)
	}
	// The stored secret is the first one: the run sees it.
	if _, err := e.svc.Supervisor().Start(ctx, "a", c.ID); err != nil {
		t.Fatal(err)
	}
	var rec harness.ChannelConfig
	deadline := time.Now().Add(10 * time.Second)
	for rec.LastError == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		rec, _ = e.svc.Supervisor().Get(ctx, "a", c.ID)
	}
	// last_error quotes the config: the declared secrets are redacted,
	// the rest kept.
	if !strings.Contains(rec.LastError, "api_key:"+agent.Mask) || strings.Contains(rec.LastError, "AK-1") ||
		strings.Contains(rec.LastError, "PW-1") || strings.Contains(rec.LastError, "pw@h") || !strings.Contains(rec.LastError, "green") {
		t.Errorf("last_error %q", rec.LastError)
	}
	if _, err := e.svc.Supervisor().Stop(ctx, "a", c.ID); err != nil {
		t.Fatal(err)
	}

	s, err := e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{Type: "silent", Config: config()})
	if err != nil {
		t.Fatal(err)
	}
	auth, _ = s.Config["auth"].(map[string]any)
	if s.Config["api_key"] != agent.Mask || s.Config["keywords"] != agent.Mask || s.Config["monkey_mode"] != agent.Mask ||
		s.Config["dsn"] != "postgres://u:"+agent.Mask+"@h/db" || auth["password"] != agent.Mask || auth["token_hint"] != agent.Mask {
		t.Errorf("default rule: %v", s.Config)
	}

	n, err := e.svc.Supervisor().Create(ctx, "a", harness.ChannelConfig{Type: "none", Config: config()})
	if err != nil {
		t.Fatal(err)
	}
	// Credentials in a URL are masked whatever the type declares.
	if n.Config["api_key"] != "AK-1" || n.Config["keywords"] == agent.Mask || n.Config["dsn"] != "postgres://u:"+agent.Mask+"@h/db" {
		t.Errorf("no secrets: %v", n.Config)
	}

	// The mask is still refused where nothing is stored.
	_, err = e.svc.Supervisor().Update(ctx, "a", n.ID, func(x *harness.ChannelConfig) error {
		x.Config["new_key"] = agent.Mask
		return nil
	})
	if !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "config.new_key") {
		t.Errorf("mask with nothing stored: %v", err)
	}
}
