// Package mcptool answers the calls of tool records that name an MCP
// (Model Context Protocol) server, with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): a program started as a child
// process speaking MCP on its standard input and output (mcp.command), or
// a server over MCP's streamable HTTP transport (mcp.url).
//
// A Manager is a harness.ToolConnector: registered in the Registry
// (Registry.RegisterToolConnector), it is what harness.AnswerToolCall asks
// for the Tool of a record with an MCP block, so evaluations (the engine's
// tool loop) and agents' chats reach MCP servers the same way.
//
// Lifecycle:
//
//   - One connection per tool record (by id), shared by every call of the
//     process: started on the tool's first call, kept while the process
//     runs. A record whose mcp block changed gets a new connection; the
//     old one is closed.
//   - Each call is bounded by Options.CallTimeout (gauntlet's
//     --tool-timeout) besides its context, start-up included. A call that
//     runs out of time errors; the server is sent MCP's cancellation and
//     stays up for the next call.
//   - Every message from the server is bounded by Options.MaxAnswerBytes
//     (the answer limit, as for a model's answer): a larger one is never
//     held whole; the call errors, and the connection, whose stream can no
//     longer be trusted, is closed and started again on the next call.
//   - A server that dies under a call (its process exits, its connection
//     breaks) is restarted once, as a plugin is: the call is tried again
//     on a new process, one retried call at a time; a second death makes
//     the call an error. Later calls start the server again after a
//     backoff that doubles with each failure in a row (200 ms up to 30 s),
//     so a server that keeps crashing fails its calls at once instead of
//     being restarted in a loop. A server that cannot start fails the call
//     with why (how the process ended, the last line it wrote to stderr).
//   - A started program gets PATH, HOME, TMPDIR, LANG and LC_ALL of
//     Gauntlet's environment and the record's env (its ${VAR} references
//     resolved then), nothing else. It runs in a process group of its own;
//     what it writes to stderr goes to the log, line by line (each cut at
//     4 KiB, at most 100 lines a second), prefixed with the tool id.
//   - Close closes every connection and ends every process (closing its
//     standard input, then killing its process group after
//     Options.StopGrace), and returns once they are gone.
//
// What a call returns to the model: the result's structured content when
// it has some; else its text (one text part, or several joined by
// newlines) as it is when it is JSON, else as a JSON string; else its
// content parts as MCP gives them. A result the server marks as an error
// makes the call an error with the result's text.
package mcptool
