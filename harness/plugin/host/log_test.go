package host

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

// recorder is a slog.Handler that keeps the records.
type recorder struct {
	mu   *sync.Mutex
	recs *[]string
	attr []slog.Attr
}

func newRecorder() recorder { return recorder{mu: &sync.Mutex{}, recs: &[]string{}} }

func (r recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	for _, a := range r.attr {
		b.WriteString(" " + a.String())
	}
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	r.mu.Lock()
	*r.recs = append(*r.recs, b.String())
	r.mu.Unlock()
	return nil
}

func (r recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := r
	c.attr = append(append([]slog.Attr(nil), r.attr...), attrs...)
	return c
}

func (r recorder) WithGroup(string) slog.Handler { return r }

func (r recorder) find(substrs ...string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range *r.recs {
		ok := true
		for _, s := range substrs {
			ok = ok && strings.Contains(rec, s)
		}
		if ok {
			return true
		}
	}
	return false
}

// What a plugin logs (slog, log) and prints reaches the host's logger,
// with its level and attributes.
func TestPluginLogs(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	rec := newRecorder()
	_, reg := newManager(t, Options{Dir: dir, Logger: slog.New(rec)})
	ev, _ := reg.Evaluator("testeval")
	if _, err := ev.Evaluate(t.Context(), evalRequest("log", "")); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"WARN plugin says", "plugin=gauntlet-evaluator-testeval", "answer=42"},
		{"INFO printed on stdout", "plugin=gauntlet-evaluator-testeval", "stream=stdout"},
		{"INFO via the log package", "plugin=gauntlet-evaluator-testeval"},
		{"INFO plugins: started", "version=1.2.3"},
	} {
		if !harnesstest.Within(5*time.Second, func() bool { return rec.find(want...) }) {
			rec.mu.Lock()
			t.Errorf("no record with %q in:\n%s", want, strings.Join(*rec.recs, "\n"))
			rec.mu.Unlock()
		}
	}
}
