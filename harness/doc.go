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
package harness
