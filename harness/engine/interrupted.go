package engine

import (
	"context"
	"os"
	"strconv"
	"time"
)

// noteInterrupted writes, for each run New marked interrupted, why it
// ended into the run's log: its log file (when the engine keeps them) and
// the log stream, in the form of every other line, filed under the run's
// first cell ("[<domain>][L<level>] run <id> interrupted: …").
func (e *Engine) noteInterrupted(ctx context.Context, ids []string) {
	for _, id := range ids {
		info, err := e.opts.Runs.Run(ctx, id)
		if err != nil {
			continue
		}
		domain, level, ok, err := e.opts.Runs.FirstCell(ctx, id)
		if err != nil || !ok {
			continue
		}
		line := "[" + domain + "][L" + strconv.Itoa(level) + "] run " + id + " interrupted: " + info.Error +
			"; its finished results are kept, and resuming it runs the rest"
		e.logs.push(line)
		if e.opts.LogDir == "" {
			continue
		}
		f, err := os.OpenFile(e.logPath(id), os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			continue // a run without a log file here (another host's, or none kept)
		}
		f.WriteString(time.Now().UTC().Format(time.RFC3339Nano) + " " + line + "\n")
		f.Close()
	}
}

// errorNote is ": <why>" for the error a run ended with, "" for none.
func errorNote(why string) string {
	if why == "" {
		return ""
	}
	return ": " + why
}
