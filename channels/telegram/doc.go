// Package telegram is the "telegram" channel: it connects an agent to a
// Telegram bot, using github.com/go-telegram/bot and long polling, so the
// server needs no public address.
//
// # Config
//
// A channel record's config holds:
//
//   - bot_token (required): the token BotFather gave the bot, such as
//     "123456:ABC-DEF…". It is a secret: it never appears in an error this
//     package returns or in a line it logs (nor in what the Telegram
//     client library reports, which is routed through the same redaction).
//   - api_url (optional): the base URL of a self-hosted Bot API server, or
//     of a fake such as package telegramtest; default
//     https://api.telegram.org.
//   - show_sources (optional, default false): end each reply with the
//     knowledge-base chunks it drew on, such as "Sources: faq.md (part 2),
//     guide.pdf (part 5)" (see SourcesLine).
//
// Config declares these. ValidateChannelConfig decodes a record's config
// into it with harness.DecodeConfig before the record is stored, so a key
// it has no field for is refused, with the nearest known key as a
// suggestion. Run reads a stored record the same way but ignores unknown
// keys, so that a channel saved by another version still starts.
//
// # Lifecycle
//
// Run checks the token with getMe (a refused token ends Run at once with an
// error matching ErrTokenRefused), then long-polls getUpdates until its
// context is cancelled, and returns nil then, after polling has stopped and
// the messages being answered have been dropped or finished. Each text
// message becomes a harness.ChannelHost.Chat call with user id
// "telegram:<from.id>", and the reply goes back to the same chat with
// sendMessage, split into parts of at most 4,096 characters on line or word
// boundaries where possible. Messages of one chat are answered in order,
// one at a time; different chats are answered in parallel.
//
// Commands: /start (and /help) greet the user, naming the channel; /clear
// forgets the sender's conversation (harness.ChannelHost.Clear). A command
// addressed to another bot (/start@other_bot) is ignored; other commands
// go to the agent as text.
//
// When the agent fails, the user gets a short apology and the error is
// logged. When getUpdates keeps failing (Options.MaxPollFailures times in a
// row, with the client library's back-off between attempts), Run returns
// an error matching ErrPolling, so the agent service marks the channel as
// failed and starts it again later; a single failure only costs a retry.
//
// One *Channel serves any number of channel records at once: all state
// lives in the Run call.
package telegram
