// Package target sends the turns of a conversation to a black-box target:
// a system under test reachable only over HTTP, described by a
// harness.TargetDefinition (targets/<id>.yaml).
//
// # Lifecycle
//
// New checks a definition and reads the environment variables it names
// (${VAR} in its URL, header values and signing secret); a variable that
// is not set is an error naming it, before anything is sent. The Client
// it returns is safe for concurrent use: make one per target and run, and
// call Send for each user turn of each test. Every Client shares one HTTP
// client (a connection pool of 256 idle connections per host) unless
// Options.HTTPClient gives another; nothing needs closing.
//
// # One turn
//
// Send renders the definition's body with the turn (the {{prompt}},
// {{messages}} and {{conversation_id}} placeholders), signs it when the
// definition asks, POSTs it (or PUTs, PATCHes) and reads the answer, the
// tool calls and the sources from the JSON reply at the definition's
// pointers. The conversation id is the same for every turn of one test
// and repeat (ConversationID makes one per run), so that a target that
// keeps its own history (the project's webhook channel keeps one per
// user_id) sees one conversation.
//
// # Bounds and errors
//
// Each attempt is bounded by Options.Timeout, or the turn's own Timeout
// (the run's), reading the reply included; the reply's body is read up to
// Options.MaxResponseBytes (DefaultMaxResponseBytes, the same 4 MiB that
// bounds a model's answer). Redirects are not followed.
//
// Errors are *Error values whose text says why, in the terms a test's
// details.error shows: the HTTP status and the target's message, "the
// target answered text/html, not JSON", "response too large", "nothing
// at /answer in the reply", "the answer at /answer is a number, not a
// string", the connection refused, the timeout. They classify as a model
// endpoint's errors do (harness.AttemptStatusOf): a refused connection or
// an unknown host matches harness.ErrUnreachable, so a run that finds its
// target down stops as it does for a model endpoint. Attempts that might
// succeed again (408, 409, 429, a 5xx other than 501, a timeout, a lost
// connection, a reply cut short) are retried with exponential backoff, up
// to Options.MaxRetries or the turn's own MaxRetries; the others fail at
// once. Resolved secrets never appear in an error.
package target
