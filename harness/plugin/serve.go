package plugin

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/internal/shim"
)

// ServeOpts says what a plugin process serves. Exactly one of Evaluator,
// Channel and Tool must be set.
type ServeOpts struct {
	Evaluator harness.Evaluator
	Channel   harness.Channel
	Tool      harness.Tool

	// Name is reported to the host (`gauntlet plugins`); empty means the
	// executable's file name.
	Name string
	// Version is reported to the host; empty means the main module's
	// version from the build information (a tagged version when built
	// with `go install module@version`, else the VCS revision), or
	// "devel".
	Version string
}

// ServeEvaluator serves e as an evaluator plugin until the host stops it.
// It is the whole of a plugin's main function:
//
//	func main() { plugin.ServeEvaluator(keyword.New()) }
//
// If e also implements harness.ConfigValidator, the host uses it to check
// evaluator records of the plugin's type.
func ServeEvaluator(e harness.Evaluator) { Serve(&ServeOpts{Evaluator: e}) }

// ServeChannel serves c as a channel plugin until the host stops it. If c
// also implements harness.ChannelConfigValidator or harness.Receiver, the
// host uses them.
func ServeChannel(c harness.Channel) { Serve(&ServeOpts{Channel: c}) }

// ServeTool serves t as a tool plugin until the host stops it. Its
// Definition's name must be the name in the executable's file name
// (gauntlet-tool-<name>).
func ServeTool(t harness.Tool) { Serve(&ServeOpts{Tool: t}) }

// Serve serves one implementation as a plugin until the host stops it, then
// exits the process. Run by hand rather than by a host, it says so and
// exits with status 1.
//
// While it serves, the default slog logger (and so the log package) writes
// structured lines to the host's log, and what the plugin writes to
// os.Stdout and os.Stderr is copied there too. The process also exits when
// its host process goes away without stopping it.
func Serve(opts *ServeOpts) {
	meta := shim.Meta{Name: opts.Name, Version: opts.Version}
	if meta.Name == "" {
		meta.Name = filepath.Base(os.Args[0])
	}
	if meta.Version == "" {
		meta.Version = buildVersion()
	}
	var set goplugin.PluginSet
	n := 0
	if opts.Evaluator != nil {
		n++
		set = goplugin.PluginSet{string(KindEvaluator): &shim.EvaluatorPlugin{Impl: opts.Evaluator, Meta: meta}}
	}
	if opts.Channel != nil {
		n++
		set = goplugin.PluginSet{string(KindChannel): &shim.ChannelPlugin{Impl: opts.Channel, Meta: meta}}
	}
	if opts.Tool != nil {
		n++
		set = goplugin.PluginSet{string(KindTool): &shim.ToolPlugin{Impl: opts.Tool, Meta: meta}}
	}
	if n != 1 {
		fmt.Fprintf(os.Stderr, "%s: plugin.Serve needs exactly one of Evaluator, Channel and Tool (got %d)\n", meta.Name, n)
		os.Exit(1)
	}

	stderr := os.Stderr // go-plugin redirects os.Stderr once serving
	slog.SetDefault(slog.New(newLogHandler(stderr)))
	if os.Getenv(Handshake.MagicCookieKey) == Handshake.MagicCookieValue {
		go exitWithParent(os.Getppid())
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{
			ProtocolVersion: set,
		},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(shim.MaxMessageSize))...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: meta.Name, Level: hclog.Info, Output: stderr, JSONFormat: true,
		}),
	})
}

// exitWithParent ends the process when its parent (the host) is gone, so
// that a host killed without the chance to stop its plugins leaves no
// orphans behind.
func exitWithParent(ppid int) {
	for range time.Tick(500 * time.Millisecond) {
		if os.Getppid() != ppid {
			slog.Warn("the host process is gone; exiting")
			os.Exit(2)
		}
	}
}

// buildVersion is the main module's version from the build information.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "devel-" + rev
}

// newLogHandler writes slog records as the JSON lines go-plugin's host
// side understands (hclog's format: @level, @message, @timestamp), so a
// plugin's logs reach the host's log with their level and attributes.
func newLogHandler(w io.Writer) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: slog.LevelDebug - 4, // the host filters
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("@timestamp", a.Value.Time().Format("2006-01-02T15:04:05.000000Z07:00"))
			case slog.LevelKey:
				return slog.String("@level", hclogLevel(a.Value.Any()))
			case slog.MessageKey:
				return slog.String("@message", a.Value.String())
			}
			return a
		},
	})
}

func hclogLevel(v any) string {
	l, ok := v.(slog.Level)
	if !ok {
		return strings.ToLower(fmt.Sprint(v))
	}
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	}
	return "error"
}
