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
// # How a test runs
//
// Each sample of a test (a test, or one of its repeats) is an exchange
// between a target and a dialogue, then the test's evaluator:
//
//   - The target is what the run evaluates. It opens the sample's
//     conversation (the system message, the model, the tools offered) and
//     answers each user turn. The run's model (its tool calls answered in
//     a bounded loop) and an agent's pipeline are the targets there are; a
//     run has one, chosen once by run.targetOf.
//   - The dialogue is the user's side, given by the test: one prompt,
//     scripted turns (Test.Turns) or a simulated user
//     (Test.SimulatedUser). It writes the user's turns, has the target
//     answer each (exchange.say), and asks the test's evaluator to score
//     what it must (exchange.evaluate); its verdict is the sample's. A
//     test's dialogue is chosen by dialogueOf.
//
// Whatever the pair, the exchange records every model call and the
// transcript, goes through the response cache, the budget and the rate
// limits, prices the result and stores it; the scheduling, storing and
// counting code calls testIn and knows nothing of either. A new kind of
// target (an HTTP endpoint under test, say) is a type implementing the
// target interface (open and reply: its reply returns what the target
// said as a harness.ToolLoopResult) and a case in run.targetOf; a new kind
// of conversation is a type implementing dialogue (play) and a case in
// dialogueOf, with its fields validated by harness.Validator.Test.
// Rescores (job.stored) score stored answers again and ask no target.
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
