package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/server"
)

// serverAskTimeout bounds the question to a running server.
const serverAskTimeout = 5 * time.Second

// pluginList is the body of GET /api/plugins, which `gauntlet plugins`
// prints; the local scan fills in the same shape.
type pluginList = server.PluginReport

// errNoServer reports that no server answered: the caller scans the
// directory itself instead.
var errNoServer = errors.New("no server")

// pluginsCmd is "gauntlet plugins": the plugins of a running server, as
// its plugin manager sees them (GET /api/plugins: crashes, restarts, the
// last error, checksums); when no server answers, the plugins directory
// scanned here, each plugin started once, with the same checksum pins as
// serve.
func pluginsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gauntlet plugins", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gauntlet plugins [--server URL] [--local] [--plugins DIR] [--json]\n\n"+
			"Lists the plugins of the running server at --server: its own processes, with their state,\n"+
			"restarts, last error and checksum state. When no server answers there (or with --local),\n"+
			"scans the plugins directory here instead and starts each plugin once to check it.\n\nFlags:")
		fs.PrintDefaults()
	}
	serverURL := fs.String("server", env("GAUNTLET_SERVER", "http://127.0.0.1:8080"), "URL of the running server to ask (GAUNTLET_SERVER)")
	token := env("GAUNTLET_API_TOKEN", "")
	fs.Var(secretFlag{&token}, "api-token", "the server's API token, when it has one (GAUNTLET_API_TOKEN)")
	local := fs.Bool("local", false, "do not ask a server: scan the plugins directory here")
	dir := fs.String("plugins", env("GAUNTLET_PLUGINS", "./plugins"), "directory scanned when no server answers (GAUNTLET_PLUGINS)")
	sums := fs.String("plugin-sha256", env("GAUNTLET_PLUGIN_SHA256", ""), "pins checked when no server answers, as serve checks them: name=hex,name=hex (GAUNTLET_PLUGIN_SHA256)")
	asJSON := fs.Bool("json", false, "print the JSON of GET /api/plugins instead of a table")
	if err := parseFlags(fs, args, stderr, "give the directory with --plugins, the server with --server"); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}

	var list *pluginList
	source := ""
	if !*local {
		var err error
		list, err = askServer(ctx, *serverURL, token)
		switch {
		case errors.Is(err, errNoServer):
			fmt.Fprintf(stderr, "%v; scanning %s here instead (each plugin started once to check it)\n", err, *dir)
		case err != nil:
			return err
		default:
			source = "the server at " + harness.RedactURL(*serverURL)
		}
	}
	if list == nil {
		var err error
		if list, err = scanPlugins(ctx, *dir, *sums); err != nil {
			return err
		}
		source = "scanned here, each started once, then stopped"
	}

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	if len(list.Plugins) == 0 {
		fmt.Fprintf(stdout, "no plugins in %s (%s; names: gauntlet-evaluator-<type>, gauntlet-channel-<type>, gauntlet-tool-<name>)\n", list.Dir, source)
		return nil
	}
	fmt.Fprintf(stdout, "plugins in %s (%s):\n", list.Dir, source)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tTYPE\tVERSION\tSTATE\tPID\tRESTARTS\tCHECKSUM\tLAST ERROR")
	for _, p := range list.Plugins {
		pid := "-"
		if p.PID > 0 {
			pid = fmt.Sprint(p.PID)
		}
		// What a plugin reports never moves the cursor or breaks a row.
		lastErr := oneLine(p.LastError, 300)
		if lastErr != "" && p.LastErrorAt != nil {
			lastErr = *p.LastErrorAt + " " + lastErr
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Name, p.Kind, p.Type, dash(oneLine(p.Version, 40)), p.State, pid,
			p.Restarts, p.Checksum, lastErr)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// askServer asks the server at base for GET /api/plugins. An error
// wrapping errNoServer means nothing answered there (or not Gauntlet with
// this endpoint); other errors are the server's answer.
func askServer(ctx context.Context, base, token string) (*pluginList, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want an http or https URL such as http://127.0.0.1:8080", base)
	}
	where := harness.RedactURL(u.String())
	ctx, cancel := context.WithTimeout(ctx, serverAskTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String()+"/api/plugins", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err() // interrupted
		}
		// Refused, unresolvable, timed out, not HTTP: nobody to ask.
		return nil, fmt.Errorf("%w answered at %s (%v)", errNoServer, where, unwrapURLError(err))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("read the answer of %s: %w", where, err)
	}
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		if token == "" {
			return nil, fmt.Errorf("the server at %s needs its API token: give it with --api-token or GAUNTLET_API_TOKEN", where)
		}
		return nil, fmt.Errorf("the server at %s refused the API token (--api-token, GAUNTLET_API_TOKEN)", where)
	case http.StatusNotFound:
		return nil, fmt.Errorf("%w with GET /api/plugins at %s (an older Gauntlet, or another service; it answered 404)", errNoServer, where)
	default:
		var p struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(body, &p)
		if p.Detail == "" {
			p.Detail = strings.TrimSpace(string(body))
		}
		return nil, fmt.Errorf("the server at %s answered %s: %s", where, res.Status, p.Detail)
	}
	var list pluginList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("the answer of %s is not a plugin list: %w", where, err)
	}
	if list.Plugins == nil {
		list.Plugins = []server.PluginInfo{}
	}
	return &list, nil
}

// unwrapURLError drops net/http's "Get URL:" prefix, which repeats the
// address.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// scanPlugins discovers dir as serve does (the same checksum pins), starts
// each plugin once to learn its version and check it, and describes them.
func scanPlugins(ctx context.Context, dir, sums string) (*pluginList, error) {
	m, err := openPlugins(dir, sums, 0, harness.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	defer m.Close()
	for _, p := range m.List() {
		_ = m.Start(ctx, p.Name) // a failure shows in the list
	}
	list := server.PluginReportOf(m)
	for i := range list.Plugins {
		list.Plugins[i].PID = 0 // stopped again when this command ends
	}
	return &list, nil
}
