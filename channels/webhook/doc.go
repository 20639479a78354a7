// Package webhook is the "webhook" channel: it lets any program talk to an
// agent over HTTP. The program POSTs a signed message to the server, and
// gets the agent's reply in the response, or later at its own callback
// URL.
//
// # Config
//
// A channel record's config holds:
//
//   - secret (required): the key both sides use to sign bodies. It is a
//     secret: it is never logged and never appears in an error.
//   - callback_url (optional): an http or https URL. When set, replies are
//     POSTed there instead of being returned in the response.
//
// Config declares these. ValidateChannelConfig decodes a record's config
// into it with harness.DecodeConfig before the record is stored, so a key
// it has no field for is refused, with the nearest known key as a
// suggestion. Run and Receive read a stored record the same way but ignore
// unknown keys, so that a channel saved by another version still works.
//
// # Requests
//
// The server hands POST /api/channels/{channel_id}/webhook to Receive
// while the channel runs. The body is JSON:
//
//	{"user_id": "alice", "message": "Hello"}
//
// and the request carries the header
//
//	X-Gauntlet-Signature: sha256=<hex HMAC-SHA256 of the raw body keyed with config.secret>
//
// which Sign computes. The signature is checked first, in constant time: a
// missing or wrong one is an error wrapping harness.ErrUnauthorized (401).
// A body that is not JSON, or lacks user_id or message, is an error
// wrapping harness.ErrInvalid (422) naming the field. user_id is passed to
// the agent as given (a JSON number is taken as its digits); each user_id
// has its own conversation.
//
// Without callback_url the reply is in the response:
//
//	200 {"success": true, "response": "Hi!", "sources": [{"file": "faq.md", "chunk": 1, "score": 2.4}]}
//	502 {"success": false, "error": "<why the agent failed>"}
//
// sources lists the knowledge-base chunks the agent was given with the
// message, best first (chunk numbers from 0); [] when its knowledge base
// gave nothing.
//
// With callback_url the response comes at once,
//
//	202 {"success": true, "queued": true, "request_id": "…"}
//
// and the reply follows as a POST to callback_url, signed the same way
// (X-Gauntlet-Signature over the callback body, with the same secret;
// check it with Verify):
//
//	{"channel_id": "…", "request_id": "…", "user_id": "alice", "success": true, "response": "Hi!", "sources": […]}
//	{"channel_id": "…", "request_id": "…", "user_id": "alice", "success": false, "error": "…"}
//
// Each delivery attempt has a timeout (Options.CallbackTimeout); a network
// error or a 408, 429 or 5xx answer is retried (Options.CallbackRetries
// times, with a doubling delay); any other answer ends the delivery. When
// Options.MaxPending replies are already waiting, a new request is
// answered 429.
//
// # Lifecycle
//
// Run validates the config and blocks until its context is cancelled,
// then cancels the replies still being prepared or delivered for that
// channel, waits for them to end, and returns nil. One *Channel serves any
// number of channel records.
package webhook
