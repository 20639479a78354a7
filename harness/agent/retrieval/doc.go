// Package retrieval picks what a model is given of an agent's knowledge
// base: the whole base when it fits a token budget, otherwise the chunks
// that best match the user's message under BM25.
//
// An [Index] is the ranking alone: [NewIndex] cuts documents into chunks
// of about 800 bytes on paragraph, line and word boundaries (each chunk
// repeating up to 160 bytes of the previous one, so that a fact cut in two
// is whole in one of them), and [Index.Search] ranks them for a query. A
// [Retriever] adds the knowledge bases of a [kb.Store]: it keeps one view
// per agent (the 32 most recently used), built on first use and built
// again when [kb.Store.Version] changes (a write, a delete, or a file
// changed on disk), and [Retriever.Context] formats what fits the budget
// for a system message.
//
// # Lifecycle
//
//	store := kb.New(kb.Options{Dir: dir})
//	r := retrieval.New(retrieval.Options{KB: store, BudgetTokens: 4000})
//	text, err := r.Context(ctx, agentID, userMessage) // "" when nothing applies
//	r.Forget(agentID)                                  // when the agent is deleted
//
// It is a package of its own, apart from the file store and from the
// agent service (harness/agent, which makes one Retriever and calls
// Context on each chat turn), so that ranking can change (hybrid search
// with embeddings, say) without touching how files are kept or how chats
// run, and is tested on its own.
package retrieval
