// Package redis is a [conversation.Store] on Redis, for several replicas of
// the service that share one memory. The WhatsApp inbox and the per-sender
// lock that replicas also share are in delivery/redis, on this store's
// client ([Store.Client]) and under its prefix ([Store.Prefix]).
//
// # Keys
//
// Every key starts with [Options].Prefix ("mombot:" by default):
//
//	<prefix><kind>:<key>   a record, such as mombot:conversations:+14155551234:
//	                       a hash of its data "d", byte for byte, and version "v"
//	<prefix>version        the last version given out, by INCR
//	<prefix>put:<random>   a record's new hash, which Put renames over the
//	                       record in the same transaction
//
// One counter per prefix gives every version, so no two values of a
// record ever carry the same one, also across a delete and a new record. A
// kind may not contain ':'. delivery/redis's keys (lock:, queue:, waiting:,
// seen:) are no kinds of record.
//
// Put's keep is the hash's TTL, renewed by every Put (keep 0: none), so
// that the records of people who never come back leave Redis on their own.
// What has expired is decided by [conversation.Memory], from the data; the
// TTL only collects what it no longer reads.
//
// # Atomicity
//
// Get is one HMGET. Put and Delete are each one round trip with a small
// Lua script that writes or deletes only while the stored version is the
// expected one; Redis runs a script alone, so two replicas writing one
// record never lose an update. Put writes the new hash under a key of its
// own first, in one MULTI/EXEC with the script, which renames that over
// the record, so that the data never passes through Lua, which would copy
// it (for 27 kB, more than a SET of it costs). The scripts know nothing of
// what a record holds. List finds the keys with SCAN, never KEYS, and
// fetches the records in pipelines.
//
// # Durability and failures
//
// A write that returned nil is in Redis's memory; whether it survives a
// restart of Redis is the server's persistence configuration (appendonly
// yes; appendfsync always for the strictest). [Open] logs a warning when
// the append-only file is off.
//
// The Store talks to one Redis server, not to a Redis Cluster. It survives
// Redis restarts: the client reconnects on its own, and while Redis is down
// every call fails with an error wrapping the driver's. Calls are never
// retried (see [Open]). Errors name a record by its kind and its key
// masked, since keys hold phone numbers.
package redis
