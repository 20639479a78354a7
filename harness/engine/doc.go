// Package engine runs evaluations: one run at a time, its tests in flight
// concurrently up to a limit, each test's prompt sent to a
// harness.ChatModel (with its tools answered in a bounded loop), the
// response scored by the test's evaluator, and every finished result
// written to the runs store at once.
//
// # Lifecycle
//
// New builds an engine over Options.Definitions (anything with Export: a
// catalog from catalog.Open, or catalog.Load for definitions in an fs.FS
// with no database), Options.Runs (a runs.Store; store.OpenMemory gives a
// database that lives in memory) and Options.Client. It marks runs that a
// dead process left "running" as "interrupted". The engine then runs one
// evaluation at a time:
//
//   - Run(ctx, req) starts a run and blocks until it ends, returning its
//     final runs.Info. It is the call for a program that wants a score.
//   - Start(ctx, req) starts a run and returns its id at once, whatever
//     the size of its suite; the run is prepared (its definitions stored,
//     its cells and jobs recorded: Status says Preparing) and executed in
//     the background. Resume(ctx, id) runs again what a finished run left
//     undone, and answers at once as well.
//   - Stop cancels the requests in flight and keeps what finished (status
//     stopped); Reset gives up on a stuck run at once (status aborted).
//
// A second run while one is active is harness.ErrConflict.
//
// A run lives until it ends, Stop or Reset, or until the context given to
// Run, Start or Resume is done: cancelling it stops the run as Stop does,
// and Run returns the final info with ctx.Err(). A caller whose context is
// shorter than the run should be (an HTTP request's) passes
// context.WithoutCancel(ctx) or a context of the program's lifetime.
//
// # Evaluating an agent
//
// A StartRequest with AgentID evaluates an agent instead of the bare
// model: each test's prompt goes through the agent's pipeline (its system
// prompt with the knowledge-base text retrieved for the prompt, its tools,
// its model), in a conversation of its own that is not stored. The engine
// gets the agent from Options.Agents, a one-method interface that
// agent.Service implements; the run's runs.Config records the agent and
// its definition.
//
// # Watching a run
//
// Status, Matrix and PollLogs/ReadLogs report progress on demand. Events
// report it as it happens, each with the run's progress (Done of Total),
// in three ways:
//
//   - StartRequest.OnEvent receives the events of that run only, on a
//     goroutine of its own; Run returns after it has handled the last.
//   - Subscribe(ctx, opts) returns a channel of the events of every run
//     (or of one), until ctx is done.
//   - Options.OnEvent is called synchronously for every event of every
//     run; it must return quickly.
//
// None of them can hold up a run but Options.OnEvent: a subscriber that
// falls behind loses its oldest waiting events, never the newest, and is
// told how many (Event.Dropped).
//
// The program in examples/embedder runs an embedded suite this way, end to
// end.
//
// # Memory
//
// A run's memory does not grow with its suite. When Options.Definitions is
// also a TestSource (the catalog is), a run reads the definitions without
// their tests, then the tests a page at a time, storing them with the run
// in the runs store as they come; it then reads its tests back from there,
// domain by domain, and makes each test's job when a worker is free to
// take it. Its live state is counters per cell. A definitions source that
// is not a TestSource is exported whole once per run, as before.
package engine
