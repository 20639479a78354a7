// Package plugin is the SDK for Gauntlet plugins: evaluators, channels and
// tools that run as separate executables and talk to the Gauntlet server
// over gRPC, through hashicorp/go-plugin.
//
// A plugin implements the same harness interface a built-in does
// (harness.Evaluator, harness.Channel or harness.Tool, with their optional
// capabilities) and its main function is one call:
//
//	func main() { plugin.ServeEvaluator(myEvaluator{}) }
//
// Built, the executable goes into the server's plugins directory under a
// name that says what it is: gauntlet-evaluator-<type>,
// gauntlet-channel-<type> or gauntlet-tool-<function name>. The server
// (harness/plugin/host) starts it on first use, keeps it running, restarts
// it if it crashes, and stops it when the server stops.
//
// What crosses the process boundary: the request and result types, the
// call's deadline and cancellation, errors with their kind
// (harness.ErrNotFound, ErrInvalid with a *harness.ValidationError's
// fields, ErrConflict, ErrUnauthorized, ErrUnavailable, context errors),
// and callbacks into the host: an evaluator's EvalRequest.Model is the
// run's model, served by the host; a channel's ChannelRun.Host is the
// agent. The protocol itself is in harness/plugin/proto (version 1);
// Handshake and VersionedPlugins are its go-plugin side.
//
// An evaluator plugin gets the whole test, its expected.trajectory
// included, and the tool calls the model made; harness.MatchTrajectory
// scores those calls as the built-in trajectory evaluator does.
//
// harness/harnesstest has conformance kits (TestEvaluator, TestChannel,
// TestTool) to run against an implementation before shipping it.
// docs/plugins.md is the plugin author's guide.
package plugin
