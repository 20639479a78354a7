package host

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// levelTrace is hclog's trace level in slog terms.
const levelTrace = slog.LevelDebug - 4

// hclogger routes go-plugin's logging (its own, and the JSON log lines a
// plugin writes to stderr) into a *slog.Logger.
type hclogger struct {
	log  *slog.Logger
	name string
	// onExit, when set, hears go-plugin's "plugin process exited" record
	// with the process's exit error ("" for a clean exit).
	onExit func(exitErr string)
}

var _ hclog.Logger = (*hclogger)(nil)

func toSlog(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return levelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (l *hclogger) Log(level hclog.Level, msg string, args ...any) {
	if msg == "plugin process exited" && l.onExit != nil {
		exitErr := ""
		for i := 0; i+1 < len(args); i += 2 {
			if k, ok := args[i].(string); ok && k == "error" {
				exitErr, _ = args[i+1].(string)
			}
		}
		l.onExit(exitErr)
	}
	lvl := toSlog(level)
	if level == hclog.NoLevel || level == hclog.Off {
		return
	}
	ctx := context.Background()
	if !l.log.Enabled(ctx, lvl) {
		return
	}
	// go-plugin adds the plugin's own timestamp to the lines it relays;
	// the host's record has its time already.
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == "timestamp" {
			args = append(args[:i:i], args[i+2:]...)
			break
		}
	}
	l.log.Log(ctx, lvl, msg, args...)
}

func (l *hclogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *hclogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *hclogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *hclogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *hclogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *hclogger) enabled(lvl slog.Level) bool { return l.log.Enabled(context.Background(), lvl) }

func (l *hclogger) IsTrace() bool { return l.enabled(levelTrace) }
func (l *hclogger) IsDebug() bool { return l.enabled(slog.LevelDebug) }
func (l *hclogger) IsInfo() bool  { return l.enabled(slog.LevelInfo) }
func (l *hclogger) IsWarn() bool  { return l.enabled(slog.LevelWarn) }
func (l *hclogger) IsError() bool { return l.enabled(slog.LevelError) }

func (l *hclogger) ImpliedArgs() []any { return nil }

func (l *hclogger) With(args ...any) hclog.Logger {
	c := *l
	c.log = l.log.With(args...)
	return &c
}

func (l *hclogger) Name() string { return l.name }

func (l *hclogger) Named(name string) hclog.Logger {
	c := *l
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (l *hclogger) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	return &c
}

// SetLevel is a no-op: the slog handler decides.
func (l *hclogger) SetLevel(hclog.Level) {}

func (l *hclogger) GetLevel() hclog.Level {
	switch {
	case l.IsTrace():
		return hclog.Trace
	case l.IsDebug():
		return hclog.Debug
	case l.IsInfo():
		return hclog.Info
	case l.IsWarn():
		return hclog.Warn
	case l.IsError():
		return hclog.Error
	}
	return hclog.Off
}

func (l *hclogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

func (l *hclogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &lineWriter{log: l.log, level: slog.LevelInfo}
}

// lineWriter logs what is written to it, one record per line: a plugin's
// stdout and stderr once it serves.
type lineWriter struct {
	log   *slog.Logger
	level slog.Level
	attrs []any

	mu  sync.Mutex
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := string(bytes.TrimRight(w.buf[:i], "\r"))
		w.buf = w.buf[i+1:]
		if line != "" {
			w.log.Log(context.Background(), w.level, line, w.attrs...)
		}
	}
	if len(w.buf) > 64<<10 { // a very long line without a newline
		w.log.Log(context.Background(), w.level, string(w.buf), w.attrs...)
		w.buf = w.buf[:0]
	}
	return len(p), nil
}
