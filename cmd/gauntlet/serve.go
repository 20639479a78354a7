package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/server"
)

// serve is "gauntlet serve": the HTTP API and the dashboard in front of
// the application, until ctx ends.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	s, err := parseSettings("gauntlet serve", args, stderr, serverSettings)
	if s == nil {
		return err
	}
	if err := checkExposure(s.addr, s.apiToken, s.insecure); err != nil {
		return err
	}

	level := slog.LevelInfo
	if s.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	a, err := openApp(ctx, *s, appOptions{log: log, agents: true, queue: true, kind: runs.KindServe})
	if err != nil {
		return err
	}
	defer a.Close()
	logLoaded(log, s.definitions, a.loaded)
	// Results are stored without their search index, which this process
	// keeps in step a moment later, whoever stored them (a `gauntlet run`
	// beside it included).
	stopIndexer := a.runs.KeepSearchIndexed(ctx, log)
	defer stopIndexer()

	srv, err := server.New(server.Options{
		Catalog:     a.catalog,
		Engine:      a.engine,
		Runs:        a.runs,
		Agents:      a.agents,
		LLM:         server.LLMConfig{BaseURL: s.llmBaseURL, Model: s.llmModel},
		Models:      a.model,
		Plugins:     a.plugins,
		Debug:       s.debug,
		APIToken:    s.apiToken,
		CORSOrigins: splitList(s.corsOrigins),
		Limits:      s.limits.server(),
		Logger:      log,
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	// Header and idle timeouts and a header size limit; no write timeout,
	// which would cut long polls and streamed exports.
	hs := srv.HTTPServer()
	fmt.Fprintf(stdout, "Gauntlet is listening on http://%s (dashboard at http://%s/, API docs at http://%s/docs)\n", ln.Addr(), ln.Addr(), ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	// Channels that were running when the server last stopped come back.
	if err := a.agents.Supervisor().Resume(ctx); err != nil {
		log.Error("resume channels", slog.Any("error", err))
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	if a.engine.Running() {
		a.engine.Stop(5 * time.Second)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return hs.Shutdown(shutdownCtx)
}

// logLoaded logs every definitions file that did not load, and the counts
// of what did.
func logLoaded(log *slog.Logger, dir string, res *catalog.SyncResult) {
	for _, fe := range res.Errors {
		// An evaluator type's refusal may quote a URL of the file, with
		// its credentials.
		attrs := []any{slog.String("file", fe.File), slog.String("error", harness.RedactURLsIn(fe.Error))}
		if fe.Line > 0 {
			attrs = append(attrs, slog.Int("line", fe.Line))
		}
		if fe.Key != "" {
			attrs = append(attrs, slog.String("key", fe.Key))
		}
		log.Warn("definitions file not loaded", attrs...)
	}
	log.Info("definitions loaded", slog.String("dir", dir),
		slog.Int("domains", res.Loaded.Domains), slog.Int("tests", res.Loaded.Tests),
		slog.Int("evaluators", res.Loaded.Evaluators), slog.Int("tools", res.Loaded.Tools))
}

// checkExposure refuses to listen beyond loopback without an API token.
func checkExposure(addr, token string, insecure bool) error {
	if token != "" || insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without an API token: anyone who can reach it could change your definitions. "+
		"Set --api-token (GAUNTLET_API_TOKEN), listen on 127.0.0.1, or pass --insecure", addr)
}
