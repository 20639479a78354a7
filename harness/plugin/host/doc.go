// Package host runs Gauntlet plugins on the server's side: it finds the
// plugin executables in a directory, registers a shim for each in a
// harness.Registry, and manages their processes.
//
// Lifecycle:
//
//   - New discovers the executables named gauntlet-evaluator-<type>,
//     gauntlet-channel-<type> and gauntlet-tool-<function> in
//     Options.Dir (regular, executable files; anything else is ignored).
//     Nothing is started.
//   - Register registers one shim per plugin: evaluator and channel
//     plugins under their type, tool plugins under the function name of
//     their file name. The shims implement the harness interfaces and
//     every optional one (harness.ConfigValidator,
//     harness.ChannelConfigValidator, harness.Receiver,
//     harness.ConfigSecrets), so the engine and the agents use plugins
//     exactly as they use built-ins.
//   - A plugin's process starts on its first call (or Start) and is kept.
//     Each call is bounded by Options.CallTimeout besides its context,
//     whose deadline and cancellation reach the plugin.
//   - A process that dies (or stops answering: a call timed out and a
//     health probe got no answer) is killed, and the next call starts a
//     new process after a backoff that doubles with each failure in a row
//     (Options.RestartBackoff, MaxRestartBackoff). The calls in flight
//     when it died are retried once on the new process, one at a time, so
//     that only the call that crashes it again fails; that error wraps
//     plugin.ErrUnavailable and names the plugin and its exit status.
//     Plugin calls must therefore be safe to repeat.
//   - List reports every plugin: kind, type, path, version, health, pid,
//     restarts, the last error and when it happened, the checksum state,
//     the declared secret config keys. It starts nothing, but notices a
//     process that died since its last call.
//   - Close stops every process, waits for them to be gone and removes
//     their Unix sockets. A plugin process also exits by itself when its
//     host process dies.
//
// Options.Checksums pins executables by sha256, checked at discovery and
// before every start: a plugin whose file does not match is not started.
//
// A plugin need not use the Go SDK (harness/plugin): any executable that
// speaks go-plugin's gRPC protocol and the services of
// harness/plugin/proto works; docs/plugins.md says what it must do.
package host
