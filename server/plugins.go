package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
)

// PluginLister is the plugin manager as GET /api/plugins sees it: the
// directory it scanned and the state of every plugin it found.
// *host.Manager implements it.
type PluginLister interface {
	Dir() string
	List() []host.Status
}

var _ PluginLister = (*host.Manager)(nil)

type pluginHandler struct {
	plugins PluginLister
}

// apiPlugin is one plugin in GET /api/plugins.
type apiPlugin struct {
	Name    string `json:"name" doc:"The executable's file name, such as gauntlet-evaluator-keyword."`
	Kind    string `json:"kind" enum:"evaluator,channel,tool" doc:"What the plugin implements."`
	Type    string `json:"type" doc:"The name it is registered under: the evaluator or channel type, the tool's function name."`
	Path    string `json:"path" doc:"The executable's path on the server."`
	Version string `json:"version" doc:"What the plugin reported when it last started; empty until it has."`
	State   string `json:"state" enum:"stopped,running,crashed" doc:"stopped: not started yet (plugins start on first use); running: the process is up; crashed: it died, hung or could not start (last_error says why), and restarts on its next call."`
	PID     int    `json:"pid" doc:"The running process's id; 0 when none runs."`
	// Restarts and the last error survive a successful restart.
	Restarts    int     `json:"restarts" minimum:"0" doc:"Starts after the first: how many times the plugin was restarted after a crash."`
	LastError   string  `json:"last_error" doc:"Why the plugin last crashed or failed to start; kept after a successful restart. Empty when it never failed."`
	LastErrorAt *string `json:"last_error_at" doc:"When last_error happened, YYYY-MM-DD HH:MM:SS (UTC); null when it never did."`
	Checksum    string  `json:"checksum" enum:"unpinned,ok,mismatch" doc:"unpinned: no sha256 is pinned for the executable (--plugin-sha256); ok: the file matched its pin when last checked (at start-up and before every start); mismatch: it did not, and the plugin is not started."`

	Capabilities []string `json:"capabilities" doc:"The optional interfaces the plugin implements (validate_config, receive), known once it has started."`
	SecretFields []string `json:"secret_fields" nullable:"true" doc:"The config keys the plugin declares secret, masked in what the server returns; null when it declares none (keys named like token, secret, password or key are masked then) or has not started yet."`
}

// apiPluginList is the body of GET /api/plugins.
type apiPluginList struct {
	Dir     string      `json:"dir" doc:"The plugins directory the server scanned at start-up (--plugins); empty when it has no plugin manager."`
	Plugins []apiPlugin `json:"plugins" doc:"Every plugin found, sorted by name."`
}

type pluginsOutput struct {
	Body apiPluginList
}

// registerPlugins registers GET /api/plugins. A nil lister answers an
// empty list.
func registerPlugins(api huma.API, plugins PluginLister, _ *slog.Logger) {
	h := &pluginHandler{plugins: plugins}
	register(api, huma.Operation{
		OperationID: "list-plugins", Method: http.MethodGet, Path: "/api/plugins",
		Summary: "The plugins the server found, and their state", Tags: []string{tagPlugins},
		Description: "The server's own plugin manager: every executable found in the plugins directory at start-up " +
			"(gauntlet-evaluator-<type>, gauntlet-channel-<type>, gauntlet-tool-<name>), whether its process runs, " +
			"how often it was restarted after a crash and why it last failed, and whether its file matches a pinned sha256. " +
			"Nothing is started to answer.",
	}, h.list)
}

func (h *pluginHandler) list(context.Context, *struct{}) (*pluginsOutput, error) {
	return &pluginsOutput{Body: PluginReportOf(h.plugins)}, nil
}

// PluginReport is the body of GET /api/plugins, which "gauntlet plugins"
// prints, whether it asked a server or scanned the directory itself.
type PluginReport = apiPluginList

// PluginInfo is one plugin of a PluginReport.
type PluginInfo = apiPlugin

// PluginReportOf describes a plugin manager's plugins as GET /api/plugins
// does; a nil manager has none.
func PluginReportOf(pl PluginLister) PluginReport {
	out := PluginReport{Plugins: []apiPlugin{}}
	if pl == nil {
		return out
	}
	out.Dir = pl.Dir()
	for _, st := range pl.List() {
		out.Plugins = append(out.Plugins, toPluginInfo(st))
	}
	return out
}

// toPluginInfo is a plugin's status as the API shows it.
func toPluginInfo(st host.Status) apiPlugin {
	p := apiPlugin{
		Name: st.Name, Kind: string(st.Kind), Type: st.Type, Path: st.Path, Version: st.Version,
		State: string(st.Health), PID: st.PID, Restarts: st.Restarts, LastError: st.LastError,
		Checksum: string(st.Checksum), Capabilities: st.Capabilities, SecretFields: st.SecretFields,
	}
	if p.Capabilities == nil {
		p.Capabilities = []string{}
	}
	if p.Checksum == "" {
		p.Checksum = string(host.ChecksumUnpinned)
	}
	if !st.LastErrorAt.IsZero() {
		at := st.LastErrorAt.UTC().Format(harness.TimeLayout)
		p.LastErrorAt = &at
	}
	return p
}
