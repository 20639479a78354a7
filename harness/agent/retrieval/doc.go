// Package retrieval picks what a model is given of an agent's knowledge
// base: the whole base when it fits a token budget, otherwise the chunks
// that rank best for the user's message, by BM25 or, with an embedding
// model, by BM25 and embeddings fused.
//
// An [Index] is the BM25 ranking alone: [NewIndex] cuts documents into
// chunks along their sections (the text under one heading, or one PDF
// page; a document made by hand is one section): no chunk crosses a
// section, and a long section is cut on paragraph, then line, then
// sentence, then word boundaries into chunks of about 800 bytes, each
// repeating up to 160 bytes of the previous one, so that a fact cut in
// two is whole in one of them. Each chunk keeps its file, its number in
// the file, its heading path, its page and its offset in the file's text;
// its heading path is indexed with its text. [Index.Search] ranks the
// chunks for a query.
//
// A [Retriever] adds the knowledge bases of a [kb.Store]: it keeps one
// view per agent (the 32 most recently used), built on first use and
// built again when [kb.Store.Version] changes (a write, a delete, or a
// file changed on disk). [Retriever.Retrieve] formats what fits the
// budget for a system message and says which chunks those are;
// [Retriever.Search] returns the best chunks with their ranks.
//
// # Hybrid search
//
// With Options.EmbeddingModel and Options.Embedder, a background worker
// embeds the chunks of each knowledge base ([Retriever.Kick]; one agent
// at a time, batches of 64 texts, a few requests in flight), keeping the
// vectors in a [VectorStore] keyed by agent, model and the SHA-256 of the
// chunk's text ([Hash]): unchanged chunks keep their vectors across edits
// and restarts, and once a model's set is complete the agent's vectors of
// other models are removed. Once every chunk of a base has its vector, a
// search embeds the query and ranks the chunks by exact cosine similarity
// too (vectors are normalised when stored, so a dot product), and the two
// rankings are fused by reciprocal rank (a chunk scores the sum of
// 1/(60 + its place) over the rankings that place it). Until then, and
// whenever the query cannot be embedded, the search is BM25 and its
// Fallback says why. [Retriever.Status] reports the progress.
//
// # Lifecycle
//
//	store := kb.New(kb.Options{Dir: dir})
//	r := retrieval.New(retrieval.Options{KB: store, BudgetTokens: 4000,
//		EmbeddingModel: "text-embedding-3-small", Embedder: client, Vectors: vectors})
//	defer r.Close()                                 // stops the background embedding
//	got, err := r.Retrieve(ctx, agentID, userMessage) // got.Text "" when nothing applies
//	r.Forget(agentID)                                // when the agent is deleted
//
// It is a package of its own, apart from the file store and from the
// agent service (harness/agent, which makes one Retriever, gives it the
// database as its VectorStore and calls Retrieve on each chat turn), so
// that ranking can change without touching how files are kept or how
// chats run, and is tested on its own.
package retrieval
