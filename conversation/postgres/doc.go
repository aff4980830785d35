// Package postgres is a [conversation.Store] on PostgreSQL, for a host who
// runs several replicas of the service on a database they already run and
// back up. It uses pgx (github.com/jackc/pgx/v5) and its connection pool.
//
// # Tables
//
// Every record is a row of one table, records (kind, key, data, version),
// in the schema [Options].Schema ("public" by default; a URL's ?schema= in
// package storeurl), keyed by kind and key:
//
//	records            kind text, key text (both COLLATE "C": byte order, as Go's),
//	                   data bytea (the JSON value byte for byte), version bigint
//	record_versions    the sequence every version is drawn from
//	schema_migrations  the migrations applied: version, applied_at
//
// A Put or a Delete is one statement, conditioned on the version it was
// given: an INSERT ... ON CONFLICT DO NOTHING for a new record, an UPDATE
// or DELETE of the row with that version; no row returned is a conflict.
// PostgreSQL runs each statement in a transaction of its own and, under
// its default isolation, makes a statement that meets a concurrent write to
// the row wait for it and check the version again, so two replicas writing
// one record never lose an update. Versions come from one sequence, so a
// record deleted and made anew never gets back a version an earlier value
// had. List reads a kind's keys from the prefix on, in key order, through
// the primary key's index; the prefix is literal (starts_with, not LIKE).
// The store decides nothing about what it keeps: Put's keep is ignored, as
// [conversation.Memory.Sweep] deletes expired conversations and old recent
// messages itself.
//
// # Schema and migrations
//
// A writer (the default) sets up or upgrades the tables as it opens the
// database, with the migrations embedded in the binary, in one transaction
// that holds an advisory lock on the schema's name: of several replicas
// starting at once, one migrates and the others wait, then find the schema
// current. It creates the schema if it is missing (the database user then
// needs the right to create schemas; else create it beforehand). It
// refuses, changing nothing, a schema of a newer mombot ([ErrSchemaTooNew])
// and one whose records table is another program's ([ErrSchemaUnknown]).
//
// [Options].ReadOnly opens the store only to read, for the commands that
// look at records while a server may be writing: its sessions are
// read-only (default_transaction_read_only), it sets up nothing, and a
// schema without mombot's tables is an error wrapping [ErrNoSchema].
//
// # Durability, failures and forgetting
//
// A write that returned nil is committed: with PostgreSQL's defaults
// (synchronous_commit on, fsync on) it is in the write-ahead log on disk
// and survives a crash of the server. Calls are not retried; while the
// server cannot be reached they fail with an error wrapping
// [ErrUnreachable], and the pool connects again on the next call once it
// answers. Errors name a record by its kind and its key masked, since keys
// hold phone numbers, and never show the URL's password.
//
// Scrub does nothing: a deleted or overwritten row stays in the table's
// files until VACUUM (autovacuum) frees its space and a later write covers
// it, and in the write-ahead log, its archive and the backups for as long
// as the operator keeps them. Making those forget is the operator's.
package postgres
