package plugin

import (
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/gauntlet-eval/gauntlet/harness/plugin/internal/shim"
)

// ProtocolVersion is the version of the plugin protocol
// (harness/plugin/proto, package gauntlet.plugin.v1) this SDK speaks. It
// is checked in the handshake: a host only starts plugins that speak a
// version it knows.
const ProtocolVersion = shim.ProtocolVersion

// Handshake is the go-plugin handshake of Gauntlet plugins. The magic
// cookie only keeps a plugin executable from being run by hand by mistake;
// it is not a security measure.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "GAUNTLET_PLUGIN",
	MagicCookieValue: "5e6b2f0c8d4a4e1f9b7a3c2d1e0f6a5b",
}

// Kind is what a plugin implements: an evaluator, a channel or a tool.
type Kind = shim.Kind

// The plugin kinds. A plugin executable is named gauntlet-<kind>-<name>.
const (
	KindEvaluator = shim.KindEvaluator
	KindChannel   = shim.KindChannel
	KindTool      = shim.KindTool
)

// The capabilities a running plugin reports (and host.Status lists): the
// optional interfaces its implementation has.
const (
	// CapValidateConfig: harness.ConfigValidator (evaluators) or
	// harness.ChannelConfigValidator (channels).
	CapValidateConfig = shim.CapValidateConfig
	// CapReceive: harness.Receiver (channels).
	CapReceive = shim.CapReceive
)

// ErrUnavailable reports that a plugin cannot serve a call: its process
// crashed or hangs, it could not be started, or its implementation
// returned an error wrapping ErrUnavailable itself. The host's evaluator,
// channel and tool shims return errors that wrap it.
var ErrUnavailable = shim.ErrUnavailable

// VersionedPlugins returns the plugin sets of every protocol version, for
// a host's go-plugin ClientConfig.VersionedPlugins: under each version,
// one plugin per kind, dispensed by its kind's name ("evaluator",
// "channel", "tool").
func VersionedPlugins() map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		1: {
			string(KindEvaluator): &shim.EvaluatorPlugin{},
			string(KindChannel):   &shim.ChannelPlugin{},
			string(KindTool):      &shim.ToolPlugin{},
		},
	}
}
