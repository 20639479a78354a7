// Package agent manages Gauntlet's agents: conversational assistants with
// a system prompt, an optional model of their own, tools, a knowledge base,
// per-user conversations and messaging channels. The HTTP server's
// /api/agents endpoints are a thin layer over a [Service]; an embedding
// program can use one directly, without the server.
//
// # Parts
//
// A [Service] keeps the agents' records, tool lists and conversations, and
// composes three parts that have their own types and tests:
//
//   - the knowledge-base files, a [kb.Store] of package
//     harness/agent/kb ([Service.KB]);
//   - what a chat is given of them, a [retrieval.Retriever] of package
//     harness/agent/retrieval ([Service.Retriever]);
//   - the channels, a [Supervisor] ([Service.Supervisor]).
//
// The file store and retrieval are packages of their own: they need
// nothing of the agent service but an agent id (the store refuses unknown
// agents through a check the Service gives it), so they can change and be
// tested apart. The Supervisor stays a type of this package: its records
// live in the agent tables and follow this package's masking rules for
// secrets ([Mask], [MaskConfig]), and the channels it runs chat with the
// Service's agents; as a sub-package it would have to import this one,
// which imports it. The Service hands them out (KB, Retriever,
// Supervisor) rather than repeating their methods.
//
// # Lifecycle
//
//	svc, err := agent.Open(ctx, agent.Options{DB: db, DataDir: dir, Tools: cat,
//		Registry: reg, Client: client, Model: "llama3.2"})
//	svc.Supervisor().Resume(ctx) // start the channels that were running
//	...                          // Create, Chat, KB().Write, Supervisor().Start...
//	svc.Close()                  // stop the channels; the desired states are kept
//
// Open creates the tables (agents, agent_tools, agent_channels,
// chat_messages) in the database it is given; the knowledge bases are files
// under DataDir/kb/<agent_id>/. Deleting an agent removes its channels
// (stopped first), tool list, conversations and knowledge-base directory.
//
// # Chat
//
// [Service.Chat] keeps one conversation per agent and user id, stored in
// the database so that it survives a restart. A turn stores the user's
// message, then sends the model a system message (the agent's system
// prompt and its knowledge base) and the most recent messages of the
// conversation within [Options.MaxHistoryMessages] and
// [Options.MaxHistoryTokens]. The agent's tools are offered, and their
// calls answered, by [harness.RunToolLoop], the loop evaluations use too:
// each call gets the registered [harness.Tool] of the function's name,
// else the tool record's mock_response; after [Options.MaxToolRounds]
// rounds the model is asked once more, without tools, for its reply. The
// reply and the tool messages are stored when the turn succeeds; when the
// model fails, Chat returns the error and the user's message stays in the
// history. Turns of one conversation are serialised; those of different
// users run in parallel.
//
// [Service.Conversations] lists an agent's conversations, the most recent
// first, from one aggregate query (message counts and the start of each
// last message); [Service.Conversation] pages back through one, tool
// calls and tool answers included; [Service.DeleteConversation] and
// [Service.Clear] forget one.
//
// Every stored message records the channel it came through (the type and
// id of the channel record, both empty for [Service.Chat]): a running
// channel's [harness.ChannelHost] knows its record and passes it down. A
// conversation's channel is that of its latest message. Messages stored
// before this was recorded fall back on [Service.ChannelOf], the channel
// type a user id names by its prefix.
//
// # Evaluation
//
// [Service.EvalTarget] gives an agent to the evaluation engine (it
// implements engine.Agents): its definition for the run's provenance (a
// SHA-256 per knowledge-base file), its model, its tools, and the builder
// of its system message, the very one Chat uses, so that a run measures
// what users get. An evaluation stores nothing in the conversations.
// A process that evaluates agents beside a server that runs their
// channels opens the Service with [Options.LeaveChannels].
//
// # Knowledge base
//
// Knowledge-base files are UTF-8 text of at most [MaxKBFileBytes], with
// plain names ([ValidKBName]), written atomically; package kb has the
// rules. When the whole base fits [Options.KBBudgetTokens] it goes into
// the system message; otherwise the chunks that rank best for the user's
// message go in, as many as the budget allows: by BM25, or with
// [Options.EmbeddingModel] by BM25 and embeddings fused, the vectors kept
// in the database and built in the background ([Service.KBStatus],
// [Service.EmbedAll]; package retrieval).
//
// # Channels
//
// A channel connects an agent to a messaging service: a record whose type
// names a [harness.Channel] registered in the [harness.Registry].
// [Supervisor.Start] runs the implementation's Run in a goroutine with a
// [harness.ChannelHost] that chats with the agent; a failing Run sets
// status error and last_error and is restarted with exponential backoff
// until the channel is stopped. The state a user asked for is stored, and
// [Supervisor.Resume] starts the channels that were running. Config values
// under secret keys are masked ([MaskConfig]) in every returned record and
// redacted from last_error and log lines. A channel implementing
// [harness.Receiver] gets the HTTP requests pushed to it through
// [Supervisor.Inbound].
package agent
