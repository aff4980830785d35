// Package redis is a [conversation.Store] on Redis, for several replicas of
// the service that share one memory. It holds conversations only; the
// WhatsApp inbox and the per-sender lock that replicas also share are in
// delivery/redis, on this store's client ([Store.Client]) and under its
// prefix ([Store.Prefix]).
//
// # Keys
//
// Every key starts with [Options].Prefix ("mombot:" by default). A phone's
// conversation is one hash:
//
//	<prefix>chat:<phone>    hash: the head "h", and a field per turn
//
// A turn's value is its JSON as [conversation.Turn.MarshalJSON] writes it,
// in a field of its own: for a saved turn, 64 random bits in base64url. The
// head is text (turns.go): a format version, the last activity in Unix
// microseconds and the number of turns, and a line per turn, in order,
// with its field, the CRC-32C of its value and a key for each of its
// tool_use ids (the first 64 bits of the id's SHA-1, in hex):
//
//	3 1771929300123456 2
//	niowTLCUegE:9f3a01c2 040bc3d6655defe8
//	26EaYlFuvsc:1b2c3d4e
//
// One HGETALL reads a conversation at one instant: a load splits each turn
// whose checksum matches its line without decoding or validating it again
// (it was validated as it was saved) and decodes and validates any other.
// The conversation is the turns the head has lines for, in the head's
// order; a field of no line is no part of it. A save writes the turn into
// a new field and a script links it into the head, checking the new turn's
// tool ids against the lines of the turns that stay and deleting the
// fields of the turns the cap drops, without moving any turn through Lua.
//
// The previous version kept a conversation in one list (conv:<phone>, see
// list.go), and versions before it in three keys (last:, turns: and ids:,
// see legacy.go). This version reads a conversation that is only there,
// and its first save moves the turns that stay into the hash and deletes
// the older keys, atomically; since they carried the conversation's TTL,
// none are left an inactivity timeout after an upgrade. An older version
// does not read the hash: replicas of both versions sharing one Redis at
// once (during a rolling upgrade, or after going back) do not see each
// other's conversations, which then start anew for the one that cannot
// read them. Upgrade every replica at once.
//
// Apart from the conversation, a phone's recent messages (for replies to
// them, [conversation.RecentMessages]) are two keys with a week's TTL, see
// recent.go:
//
//	<prefix>recent:<phone>     hash: message id -> role, text and time
//	<prefix>recentat:<phone>   sorted set: message ids by time
//
// A phone's usage ledger ([conversation.UsageLedger]) is one more key, with
// no TTL, so that it outlives the conversation:
//
//	<prefix>usage:<phone>   hash: "<UTC day>:<count>" -> integer, such as
//	                        "2026-02-24:input_tokens"; added to by one script
//
// delivery/redis puts its keys under the same prefix (lock:, queue:,
// waiting:, seen:), on the same connections.
//
// The conversation's hash carries a TTL: the inactivity timeout of the
// save plus a second, renewed on every save. The TTL is only the garbage
// collector, so that people who never come back do not stay in Redis and
// no sweeper is needed; whether a conversation is over is decided by
// [conversation.Memory] from the stored last activity and its own clock,
// so that a fake clock in tests and the original's "more than the
// timeout" rule both hold.
//
// # Atomicity
//
// A save is one MULTI/EXEC, one round trip: an HSET of the turn into a
// new field, which so never passes through Lua, then a Lua script that
// restarts the conversation if the stored last activity is older than the
// timeout, checks the new turn's tool ids (deleting its field if one is in
// use), writes the new head, deletes the turns beyond the cap and sets the
// TTL. [Store.Expire] is a script that deletes only if the stored last
// activity is at or before the cutoff, and [Store.Load] is one HGETALL. Redis runs a transaction and a script
// alone, so two replicas saving for one phone, or a save racing an
// expiry, never leave a conversation half written. Listing uses SCAN,
// never KEYS, and so does not stop the server.
//
// # Durability
//
// A save that returned nil is in Redis's memory; whether it survives a
// restart of Redis is the server's persistence configuration
// (appendonly yes, with appendfsync always for the strictest). [Open] logs a
// warning when the append-only file is off.
//
// # Failures
//
// A Store survives Redis restarts: the client reconnects on its own, and
// while Redis is down every call fails with an error wrapping the driver's.
// [Store.Ping] tells a health check whether Redis answers.
package redis
