// Package postgres is the delivery package's backend on PostgreSQL, for
// several replicas of the service that share one database: the [Inbox] of
// each sender's messages with the record of those handled, and the
// per-sender [Locker]. It uses pgx (github.com/jackc/pgx/v5) on a pool its
// caller makes; mombot serve makes one of the conversation store's URL and
// puts the tables in the store's schema, beside its records table.
//
// # Tables
//
//	inbox              id (the message id, primary key), sender, seq, body,
//	                   pushed_at, handled_at, sending: a message waiting to be
//	                   answered (handled_at null), its reply being sent if
//	                   sending, or one handled (body null)
//	sender_locks       sender (primary key), token, expires_at: a sender's lock
//	delivery_migrations  the migrations applied to these tables
//
// The primary key of inbox is the one check of duplicates: Push inserts
// the message unless its id is there, waiting or handled. Done turns the
// head of the sender's queue into a handled row (its body dropped) in one
// transaction, so a message is waiting or handled, never both and never
// neither; Sending sets the head's sending in one statement, and
// RecordHandled inserts the handled rows of ids not there, with the times
// given, in one. Pushes of
// one sender take a transaction-scoped advisory lock on the sender, so
// that their seq numbers commit in order and a queue never gains a
// message ahead of the head a holder is answering. Handled rows
// are deleted [delivery.HandledFor] after their Done, by the database's
// clock, by a Done that finds the last clean-up an hour old.
//
// A lock is a lease: a row of sender_locks with its holder's random token
// and an expiry by the database's clock. Lock inserts the row, or takes
// over one whose lease ran out, in one statement (an INSERT ... ON
// CONFLICT DO UPDATE ... WHERE expires_at <= now()); its holder renews the
// lease every TTL/3 and deletes the row on release, if it still holds its
// token. A replica that dies holding a lock leaves it for at most the TTL
// (30 s by default). Waiters poll.
//
// The tables are set up, or upgraded, as [NewInbox] or [NewLocker] opens
// them: embedded migrations, in one transaction under an advisory lock, so
// that replicas starting at once migrate once.
//
// Every write is committed before its call returns: with PostgreSQL's
// defaults (synchronous_commit on, fsync on) a pushed message survives a
// crash of the server.
package postgres
