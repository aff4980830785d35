// Package redis is a [conversation.Store] on Redis, for several replicas of
// the service that share one memory. It holds conversations only; the
// WhatsApp inbox and the per-sender lock that replicas also share are in
// delivery/redis, on this store's client ([Store.Client]) and under its
// prefix ([Store.Prefix]).
//
// # Keys
//
// Every key starts with [Options].Prefix ("mombot:" by default). A phone's
// conversation is three keys:
//
//	<prefix>last:<phone>    string: last activity, Unix microseconds
//	<prefix>turns:<phone>   list: the turns as JSON, oldest first
//	<prefix>ids:<phone>     list: each turn's checksum and tool_use ids, hex
//
// A turn saved by this version starts with a member "_mombot" that holds a
// format version, the CRC-32C of the rest and the turn's tool_use ids in hex
// ({"_mombot":"1 9f3a01c2 746f6f6c755f31","messages":[...]}). A load splits
// a turn whose checksum matches without decoding or validating it again
// (it was validated as it was saved) and validates any other, and a save
// checks that a new turn reuses no tool id of the turns it joins from the
// ids list, without moving the turns through Lua; the list is built again
// from the turns when it is not in step with them (turns saved by an older
// version, which reads such a turn as one with an extra key and knows
// nothing of the ids list).
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
// The keys of a conversation carry the same TTL: the inactivity timeout of the save plus a second,
// renewed on every save. The TTL is only the garbage collector, so that
// people who never come back do not stay in Redis and no sweeper is needed;
// whether a conversation is over is decided by [conversation.Memory] from
// the stored last activity and its own clock, so that a fake clock in tests
// and the original's "more than the timeout" rule both hold.
//
// # Atomicity
//
// A save is one Lua script: it restarts the conversation if the stored last
// activity is older than the timeout, pushes the turn, trims the lists to the
// turn cap and sets the keys' TTL. [Store.Expire] is a script too that
// deletes only if the stored last activity is at or before the cutoff, and
// [Store.Load] reads both keys in one MULTI/EXEC. Redis runs a script alone, so
// two replicas saving for one phone, or a save racing an expiry, never leave
// a conversation half written. Listing uses SCAN, never KEYS, and so does
// not stop the server.
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
