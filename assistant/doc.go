// Package assistant answers the family's messages with Claude: the tool-use
// loop of the original design's handle_message, with per-person memory.
//
// [Assistant.Handle] takes one [Inbound] message. It loads the sender's
// history from a [conversation.Memory] (never for the "system" sender),
// appends the new user message "[local date and time] [From NAME]: text",
// calls the Messages API, runs the [Tool]s the model asks for and calls
// again, until the model answers; then it saves the whole turn, every tool
// round included, and returns the [Reply]. The turn is saved on every path
// that got somewhere: a final answer, the tool round limit, or an API
// failure after at least one tool round (the partial turn ends with tool
// results, so it is valid, and the next message knows what was done).
// [NewClient] builds the Messages API client [New] takes, with the
// retries the wait bounds below count; [Inbound.ReadFiles] reads a
// picture, a document or a voice note from files, as the ask command
// sends them.
//
// # Requests and the prompt cache
//
// Tools, system prompt and history are a byte-identical prefix from one
// request to the next: the tool definitions and system prompt are rendered
// once, the time of day is put in the new user message rather than in the
// system prompt, and the stored history is sent exactly as stored, never
// decoded into the SDK's typed blocks (which would drop thinking
// signatures, citations and server tool blocks).
//
// The history sent is a window over the stored turns ([WindowOptions],
// window.go) whose start moves in jumps rather than one turn per message,
// so the prefix stays the same for several messages and is read from the
// cache; it is kept in each turn's "window" key, so that restarts,
// replicas and new processes continue it. Up to three breakpoints are
// asked for (breakpoints.go): an hour on the tools and system prompt when
// they reach the model's minimum cacheable length, one at the end of the
// history whose lifetime is chosen per person from their pauses
// ([Options].CacheTTL), and the top-level automatic one. A prompt too long
// for the model shrinks the window once. A turn over its share of the
// window (WindowOptions.MaxTokens / MinTurns tokens, at 4 bytes a token) is
// sent in a shortened form that depends only on the stored turn (shorten.go),
// so that one message of many long tool rounds does not ride along with
// every later one, and the cache still serves it. The usage of every call (input,
// output, cache creation and cache read tokens) is logged and stored on
// the turn under the key "usage". docs/prompt-cache.md explains the
// choices; TestCacheScenarioDoneWhen holds them to their measured cost.
//
// # Failures
//
// A tool that fails, panics, gets malformed input or does not exist gives
// the model a tool_result with is_error set, and the loop goes on. An input
// over [MaxToolInput] is not run (the model is told to split it) and a
// result over [MaxToolResult] is cut. A
// tool_use whose input is not a JSON object is stored and sent back with
// the input {}, since the API refuses any other in a request. When the
// API fails, the person gets a short, kind reply and the log gets the
// status, the request id and the error type; the API key is never logged,
// and phones are logged masked. What the person reads is derived from the
// error in one place, [ErrorMessage] (package apology), which the WhatsApp
// server and the commands use too.
//
// Every stop_reason the API documents is handled deliberately (see
// stop.go): a tool call cut off by max_tokens is never run, a refused
// exchange is never stored or sent again, a paused turn is continued and
// never stored with a server tool call unanswered, and an unknown
// stop_reason runs nothing.
//
// # Bounded waits and the fallback model
//
// Each attempt of an API call gets Options.RequestTimeout, Retry-After is
// honoured up to [MaxRetryAfter], and each message gets
// Options.MessageTimeout in all (see [DefaultRequestTimeout] for the whole
// bound), so a sender's lock is never held unbounded. With
// Options.FallbackModel, a message the model fails (529, 5xx, timed out)
// or refuses is tried once on the fallback; [Reply].Model, the log and the
// stored turn's "model" key say which model answered.
//
// # Usage
//
// What each message was billed (every call that returned a message, also
// when a later call failed) is added to the memory's usage ledger
// ([conversation.Memory.AddUsage], or [Options].Ledger), per person and
// UTC day, so that it outlives the turns; the cache writes are split by
// lifetime, 5 minutes or 1 hour, as the API reports them. Recording changes
// nothing that is sent, and a failure to record is logged, not returned.
//
// # Kinds of message
//
// Besides text and photos, an [Inbound] may carry a voice note, a document,
// a location, contact cards, a video's caption and the id of the message it
// replies to (see kinds.go). A voice note is transcribed by the
// [Transcriber] once the sender's turn has come and its transcript, marked
// "[Voice note, transcribed]", is the message; a PDF is a document block and
// a plain-text file a text document block, both stored as
// "[Document sent: NAME]"; a location and contact cards are written out as
// text; a video's caption comes with a note that the video cannot be
// watched. What cannot be read is refused before the model is asked, with
// the [apology] sentence that says what works, and nothing is stored. Each
// message with an id is remembered for a week among the person's recent
// messages ([conversation.Memory.Remember]); a reply quoting one of them, or
// one of the assistant's own that the caller remembered once sent, gives
// the model "[Replying to your message: "..."]" with the new words, even
// after the conversation expired.
//
// # Order
//
// Messages from one sender are handled one at a time, in arrival order,
// under the sender's lock; different senders run in parallel.
// [Assistant.Handle] takes the lock from Options.Locker ([delivery.Local]
// by default, for one process). A caller that holds it already, the
// delivery pipeline with its lock shared by replicas, hands it to
// [Assistant.HandleLocked], so that it is taken once.
//
// # Performance
//
// The original design allows memory to add 2 s to a message with 5 prior
// turns. BenchmarkMemory measures what it adds besides the API call
// (loading 5 turns, rendering them into the request, saving the new turn),
// and BenchmarkHandle runs whole messages through the fake API. The
// figures, the machine and how to reproduce them are in
// docs/benchmarks.md, section "Assistant".
//
// Package anthropictest is a fake Messages API that enforces the real API's
// request rules; every test of this package runs against it.
package assistant
