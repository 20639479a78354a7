// Package harness is the core of Gauntlet: the definitions an evaluation is
// made of (domains, per-level configuration, tests, evaluators, tools), the
// agent resources, the sentinel errors every layer shares, and the small
// interfaces that implementations satisfy:
//
//   - [Evaluator] scores one model response;
//   - [Tool] is a function a model may call;
//   - [Channel] connects an agent to a messaging service;
//   - [ChatModel] performs one chat completion.
//
// A [Registry] maps evaluator types, tool names and channel types to
// implementations. There is no global registry: a program builds one with
// [NewRegistry] and hands it to the parts that need it.
//
// [RunToolLoop] is the one tool-call loop of evaluations and agent chats.
// A tool record with an MCP block ([ToolMCP]) has its calls answered by
// the Registry's [ToolConnector] (harness/mcptool, registered by the
// binary), so that this package depends on no MCP client.
//
// Validation of every resource lives here too ([Validator]), so an embedding
// program and the HTTP server reject the same inputs with the same messages.
//
// Three names recur across the packages and always mean the same thing:
// a Client is the [ChatModel] that performs requests; Model is the
// model name sent to the endpoint (such as "llama3.2"); ModelName is a
// run's label, chosen by whoever starts it (the API's model_name).
//
// Storage, the evaluation engine and the model client live in sub-packages
// (harness/catalog, harness/store, harness/llm); this package imports none of
// them and none of their dependencies.
//
// A program embeds an evaluation with those sub-packages alone: a suite in
// an fs.FS loaded with catalog.Load, runs kept by store.OpenMemory and
// runs.Open, and engine.Run, which returns when the run ends. The package
// examples/embedder of this module is such a program, run by its tests.
//
// Importing these packages changes nothing else in the program: no init
// function or package variable of theirs touches the default loggers, the
// HTTP transport or ServeMux, the environment or another package's
// settings. What dependencies register on import, they register as usual:
// harness/store links the pure-Go SQLite driver (database/sql name
// "sqlite") and pgx's PostgreSQL driver (names "pgx" and "pgx/v5"); the
// plugin packages link gRPC, whose golang.org/x/net/trace
// adds /debug/requests and /debug/events to http.DefaultServeMux (they
// answer local requests only; build with -tags grpcnotrace to leave them
// out). Only plugin.Serve, which is a plugin process's whole main, sets
// that process's default logger.
package harness
