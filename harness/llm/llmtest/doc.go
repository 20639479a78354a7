// Package llmtest provides a fake OpenAI-compatible model endpoint for tests
// and demos, in the manner of net/http/httptest: start one on loopback,
// point a client at its URL, read its counters, close it.
//
//	srv := llmtest.NewServer(llmtest.Options{Latency: 10 * time.Millisecond})
//	defer srv.Close()
//	client, _ := llm.New(llm.Options{BaseURL: srv.URL, Model: llmtest.DefaultModel})
//	resp, _ := client.Chat(ctx, &harness.ChatRequest{Messages: []harness.Message{
//		{Role: harness.RoleUser, Content: "What is 2 + 3?"},
//	}})
//	fmt.Println(resp.Message.Content)   // The answer is 5.
//	fmt.Println(srv.Stats().PeakInFlight)
//
// The server speaks the real wire protocol: GET /v1/models, POST
// /v1/embeddings (deterministic vectors: see [Embedding]) and POST
// /v1/chat/completions (also streamed as server-sent events when the
// request says "stream": true, with the usage at the end when
// stream_options.include_usage asks for it). Any client of the OpenAI API
// works against it, so a program's own tests can use it without a model.
//
// # Answers
//
// A chat completion is answered by the first of these that applies:
//
//  1. [Options.Respond], a function of the decoded [Request], when it
//     returns a non-nil [Reply] (which may also be an error status);
//  2. a summary of the tool results, when tool messages follow the last
//     user message: "The result of get_weather is {...}.";
//  3. [Options.Answers], when one of its keys is a substring of the last
//     user message (the longest key wins);
//  4. a restatement, when the last user message asks for the final answer
//     ([IsRestate]) and an assistant answer precedes it: the bare value of
//     that answer, its last number (with none, what follows its last
//     "answer is", else the whole answer);
//  5. a tool call, when the request offers tools and the last user message
//     names one of them, or a word of its description: finish_reason
//     "tool_calls", arguments from [Options.ToolArguments] or guessed from
//     the prompt and the function's JSON Schema;
//  6. arithmetic, when the last user message asks "What is A + B?" (also
//     -, *, /, negative and decimal numbers, more than two operands):
//     "The answer is 42.";
//  7. knowledge, when a system message holds knowledge-base text (after a
//     line such as "Knowledge base:" or "Knowledge base excerpts (…):",
//     as an agent's retrieval writes it): the sentence of that text that
//     shares the most words with the last user message, the first of
//     equals ([BestSentence]), so that an agent answers right when its
//     retrieval gives the right text and wrong when it does not;
//  8. otherwise the last user message, echoed.
//
// Usage is counted deterministically with [CountTokens] (a token per four
// characters, rounded up), and max_tokens cuts an answer short with
// finish_reason "length".
//
// # Faults
//
// Options add latency (fixed plus a seeded jitter) and faults picked by a
// [Schedule] of request numbers: 500 answers, 429 answers with Retry-After,
// overloaded answers (503, or Anthropic's 529) with Retry-After,
// requests that hang until the client gives up, 200 answers with a
// malformed JSON body (a stream whose event is cut inside its JSON),
// streams cut short without their end, huge answers (valid, as long as one
// asks, generated while they are sent so they cost the server no memory)
// and answers with a NUL byte in their text. Latency and faults apply to chat completions
// only.
// The same Seed gives the same faults to the same request numbers, however
// many requests run at once.
//
// # Counters
//
// [Handler.Stats] reports the requests received, the peak number in flight
// at once, the answers by status, the hung requests, the malformed bodies,
// huge answers (and how many of their bytes were written before the client
// hung up) and NUL answers sent. [Handler.ResetStats] starts them again.
//
// [NewHandler] gives the same endpoint as an http.Handler, to serve on an
// address of one's choice; "gauntlet mockllm" does that.
//
// # Anthropic
//
// POST /v1/messages speaks Anthropic's Messages API (base URL: the
// server's without /v1): the key in x-api-key, the anthropic-version header
// required, max_tokens required, errors as {"type": "error", "error":
// {"type", "message"}}, answers as content blocks, streamed as Anthropic's
// server-sent events when "stream" is true. The answers are the ones
// above. A request that enables thinking gets a thinking block first
// ([ThinkingText], signed), counted in output_tokens and reported as
// thinking_tokens; the signature is checked when the block comes back. As
// the API does, the fake refuses a tool_use block not answered by a
// tool_result in the next message, a tool_result that answers none, and,
// with thinking on, a tool loop whose assistant turn does not start with
// its thinking. A [Reply]'s Usage gives input_tokens (its prompt tokens
// less the cached ones), cache_read_input_tokens and output_tokens. The
// RateLimits schedule answers 429 rate_limit_error, Overloaded 529
// overloaded_error (503 on the chat completions API), Garbage a body or an
// event stream cut short. GET /v1/models with an anthropic-version header
// answers in Anthropic's shape.
//
// # Gemini
//
// The same server speaks Google's Gemini API at its root (the server's URL
// without /v1): POST /v1beta/models/{model}:generateContent,
// :streamGenerateContent (server-sent events: the thought, the text in a
// few chunks, the function calls, the finish reason and usage last) and
// GET /v1beta/models, the key in x-goog-api-key or ?key=. Requests get
// the same answers, schedules and faults as chat completions; a function
// call's id is its function's name when Gemini gives none. A request
// whose thinkingConfig asks for thoughts gets [GeminiThought] first, with
// a thought signature (and one on its first function call), counted in
// thoughtsTokenCount; Reply.Usage sets the counts, its CachedTokens as
// cachedContentTokenCount. Errors have Google's shape ({"error": {"code",
// "message", "status"}}: 429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE...), and
// a Garbage answer to a stream is one good event and one cut short.
package llmtest
