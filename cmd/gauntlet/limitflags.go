package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/server"
)

// limitSettings are the HTTP limits of gauntlet serve (server.Limits),
// each from its flag, else its environment variable, else the server's
// default.
type limitSettings struct {
	registered bool

	maxBody       byteSize
	maxImportBody byteSize
	maxUpload     byteSize

	readHeaderTimeout time.Duration
	readBodyTimeout   time.Duration
	idleTimeout       time.Duration

	webhookRate          float64
	webhookBurst         int
	webhookInFlight      int
	webhookInFlightTotal int
}

// register registers the limit flags on fs, each defaulting to its
// environment variable, else to server.DefaultLimits. It fails when such
// a variable does not parse.
func (l *limitSettings) register(fs *flag.FlagSet) error {
	d := server.DefaultLimits()
	var errs []error
	size := func(name string, def int64) byteSize {
		n, err := envByteSize(name, def)
		errs = append(errs, err)
		return byteSize(n)
	}
	duration := func(name string, def time.Duration) time.Duration {
		v, err := envDuration(name, def)
		errs = append(errs, err)
		return v
	}
	integer := func(name string, def int) int {
		v, err := envInt(name, def)
		errs = append(errs, err)
		return v
	}
	l.maxBody = size("GAUNTLET_MAX_BODY", d.BodyBytes)
	l.maxImportBody = size("GAUNTLET_MAX_IMPORT_BODY", d.ImportBytes)
	l.maxUpload = size("GAUNTLET_MAX_UPLOAD", d.UploadBytes)
	headerTimeout := duration("GAUNTLET_READ_HEADER_TIMEOUT", d.HeaderTimeout)
	bodyTimeout := duration("GAUNTLET_READ_BODY_TIMEOUT", d.BodyTimeout)
	idleTimeout := duration("GAUNTLET_IDLE_TIMEOUT", d.IdleTimeout)
	rate, err := envFloat("GAUNTLET_WEBHOOK_RATE", d.WebhookRate)
	errs = append(errs, err)
	burst := integer("GAUNTLET_WEBHOOK_BURST", d.WebhookBurst)
	inFlight := integer("GAUNTLET_WEBHOOK_IN_FLIGHT", d.WebhookConcurrency)
	inFlightTotal := integer("GAUNTLET_WEBHOOK_IN_FLIGHT_TOTAL", d.WebhookTotal)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fs.Var(&l.maxBody, "max-body", "largest request body of an ordinary API operation, a `size` such as 1MiB or 512KiB; the webhook takes at most 1 MiB (GAUNTLET_MAX_BODY)")
	fs.Var(&l.maxImportBody, "max-import-body", "largest body of a definitions or dataset import, a `size` such as 64MiB (GAUNTLET_MAX_IMPORT_BODY)")
	fs.Var(&l.maxUpload, "max-upload", fmt.Sprintf("largest knowledge-base upload, a `size` up to %s (a 50 MiB document and its envelope), such as 20MiB (GAUNTLET_MAX_UPLOAD)", byteSize(server.MaxUploadBytes)))
	fs.DurationVar(&l.readHeaderTimeout, "read-header-timeout", headerTimeout, "time a client has to send a request's headers (GAUNTLET_READ_HEADER_TIMEOUT)")
	fs.DurationVar(&l.readBodyTimeout, "read-body-timeout", bodyTimeout, "time a client has to send a body of up to 1 MiB once its headers are in; a larger body has one more second per 128 KiB (GAUNTLET_READ_BODY_TIMEOUT)")
	fs.DurationVar(&l.idleTimeout, "idle-timeout", idleTimeout, "how long an idle connection is kept open (GAUNTLET_IDLE_TIMEOUT)")
	fs.Float64Var(&l.webhookRate, "webhook-rate", rate, "webhook requests a second one client address may keep up (GAUNTLET_WEBHOOK_RATE)")
	fs.IntVar(&l.webhookBurst, "webhook-burst", burst, "webhook requests one client address may send at once after a pause (GAUNTLET_WEBHOOK_BURST)")
	fs.IntVar(&l.webhookInFlight, "webhook-in-flight", inFlight, "webhook requests one client address may have in progress (GAUNTLET_WEBHOOK_IN_FLIGHT)")
	fs.IntVar(&l.webhookInFlightTotal, "webhook-in-flight-total", inFlightTotal, "webhook requests in progress from all addresses together (GAUNTLET_WEBHOOK_IN_FLIGHT_TOTAL)")
	l.registered = true
	return nil
}

// check refuses limits out of range, once the flags are parsed: every
// limit is above zero (a zero would not mean "none").
func (l *limitSettings) check() error {
	if !l.registered {
		return nil
	}
	for _, s := range []struct {
		name string
		v    byteSize
	}{{"--max-body", l.maxBody}, {"--max-import-body", l.maxImportBody}, {"--max-upload", l.maxUpload}} {
		if s.v <= 0 {
			return fmt.Errorf("%s must be above 0, not %s", s.name, s.v)
		}
	}
	if l.maxUpload > server.MaxUploadBytes {
		return fmt.Errorf("--max-upload must be at most %s (the knowledge base takes no larger document), not %s", byteSize(server.MaxUploadBytes), l.maxUpload)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--read-header-timeout", l.readHeaderTimeout}, {"--read-body-timeout", l.readBodyTimeout}, {"--idle-timeout", l.idleTimeout}} {
		if d.v <= 0 {
			return fmt.Errorf("%s must be above 0, not %v", d.name, d.v)
		}
	}
	if !(l.webhookRate > 0) || math.IsInf(l.webhookRate, 0) {
		return fmt.Errorf("--webhook-rate must be a number above 0, not %v", l.webhookRate)
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"--webhook-burst", l.webhookBurst}, {"--webhook-in-flight", l.webhookInFlight}, {"--webhook-in-flight-total", l.webhookInFlightTotal}} {
		if n.v <= 0 {
			return fmt.Errorf("%s must be at least 1, not %d", n.name, n.v)
		}
	}
	return nil
}

// server returns the limits as the server takes them.
func (l *limitSettings) server() server.Limits {
	return server.Limits{
		BodyBytes: int64(l.maxBody), ImportBytes: int64(l.maxImportBody), UploadBytes: int64(l.maxUpload),
		HeaderTimeout: l.readHeaderTimeout, BodyTimeout: l.readBodyTimeout, IdleTimeout: l.idleTimeout,
		WebhookRate: l.webhookRate, WebhookBurst: l.webhookBurst,
		WebhookConcurrency: l.webhookInFlight, WebhookTotal: l.webhookInFlightTotal,
	}
}

// byteSize is a size flag: a number of bytes, with an optional unit (B,
// KiB, MiB, GiB, or KB, MB, GB in powers of 1000; any case), such as
// 1MiB, 512KiB, 1.5MiB or 1048576.
type byteSize int64

var sizeUnits = []struct {
	suffix string
	n      float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9},
	{"b", 1},
}

// parseByteSize reads a size written as byteSize says.
func parseByteSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.n
			break
		}
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil && mult == 1 {
		return n, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a size such as 1MiB, 512KiB or 1048576", s)
	}
	v := f * mult
	if v > math.MaxInt64 || v < math.MinInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	return int64(v), nil
}

func (b *byteSize) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// String writes the size with the largest binary unit that divides it:
// 1MiB, 50MiB, 64KiB, 1000B.
func (b byteSize) String() string {
	n := int64(b)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

func envByteSize(name string, def int64) (int64, error) {
	v := env(name, "")
	if v == "" {
		return def, nil
	}
	n, err := parseByteSize(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not a size such as 1MiB, 512KiB or 1048576", name, v)
	}
	return n, nil
}

func envFloat(name string, def float64) (float64, error) {
	v := env(name, "")
	if v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not a number", name, v)
	}
	return f, nil
}
