// Package agent manages Gauntlet's agents: conversational assistants with
// a system prompt, an optional model of their own, tools, a knowledge base,
// per-user conversations and messaging channels. The HTTP server's
// /api/agents endpoints are a thin layer over a [Service]; an embedding
// program can use one directly, without the server.
//
// # Lifecycle
//
//	svc, err := agent.Open(ctx, agent.Options{DB: db, DataDir: dir, Tools: cat,
//		Registry: reg, Client: client, Model: "llama3.2"})
//	svc.Resume(ctx)        // start the channels that were running
//	...                    // Create, Chat, KBWrite, StartChannel...
//	svc.Close()            // stop the channels; the desired states are kept
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
// [Options.MaxHistoryTokens]. The agent's tools are offered; each call is
// answered by the registered [harness.Tool] of the function's name, else by
// the tool record's mock_response, for at most [Options.MaxToolRounds]
// rounds. The reply and the tool messages are stored when the turn
// succeeds; when the model fails, Chat returns the error and the user's
// message stays in the history. Turns of one conversation are serialised;
// those of different users run in parallel.
//
// # Knowledge base
//
// Knowledge-base files are UTF-8 text of at most [MaxKBFileBytes], with
// plain names ([ValidKBName]), written atomically (temporary file, then
// rename) through an os.Root, so that no name reaches outside the agent's
// directory. When the whole base fits [Options.KBBudgetTokens] it goes into
// the system message; otherwise the base is cut into chunks of about 800
// bytes on paragraph and line boundaries, with some overlap, and the
// chunks that best match the user's message under BM25 go in, as many as
// the budget allows. The index is built on first use, kept per agent (the
// 32 most recently used), and rebuilt when a file's name, size or
// modification time changes.
//
// # Channels
//
// A channel connects an agent to a messaging service: a record whose type
// names a [harness.Channel] registered in the [harness.Registry].
// [Service.StartChannel] runs the implementation's Run in a goroutine with
// a [harness.ChannelHost] that chats with the agent; a failing Run sets
// status error and last_error and is restarted with exponential backoff
// until the channel is stopped. The state a user asked for is stored, and
// [Service.Resume] starts the channels that were running. Config values
// under secret keys are masked ([MaskConfig]) in every returned record and
// redacted from last_error and log lines. A channel implementing
// [harness.Receiver] gets the HTTP requests pushed to it through
// [Service.Inbound].
package agent
