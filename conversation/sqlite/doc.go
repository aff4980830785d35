// Package sqlite is a [conversation.Store] on an SQLite database file, for a
// service that holds more conversations than a JSON file should rewrite on
// every save. It uses modernc.org/sqlite, a pure Go SQLite, so the binary
// needs no cgo.
//
// Each turn is one row, keyed by phone and sequence number, so saving a turn
// writes that turn and loading a conversation reads that phone's rows through
// the primary key index: both cost the same at a hundred phones as at a
// hundred thousand. A save is one BEGIN IMMEDIATE transaction that restarts
// an expired conversation, adds the turn and drops the oldest turns beyond
// the cap, committed with synchronous=FULL so it survives a power cut.
//
// A turn's row keeps the CRC-32C of its JSON (the sum column) and its
// tool_use ids (tool_ids): a load splits a row whose checksum matches
// without decoding or validating it again, since it was validated as it was
// saved, and validates any other (rows from before the column, or edited by
// hand). A conversation's row keeps its turn index (turn_ids): the seq and
// tool_use ids of each stored turn, and the last activity it was written
// with. A save reads that row and the number, first and last seq of the
// turn rows from the primary key's index; while they match, it checks that
// the new turn reuses no tool id of the turns it joins, and finds the row
// that the cap drops, without reading the turns, so it reads and writes the
// conversation's row and one turn row. When they do not (a database from
// before the index, rows added or deleted by hand, a save by a process of
// an older version that still has the file open) the save reads the turns'
// tool_ids and writes the index anew.
//
// The database runs in WAL mode with a busy timeout, so readers never wait
// for a writer, and several processes may share one file: writers queue on
// SQLite's lock instead of failing. The schema is created and upgraded by
// migrations embedded in the binary, recorded in a schema_version table.
// The file and its -wal and -shm companions are created with mode 0600.
//
// [Options].ReadOnly opens a store that only reads, for commands that look
// at conversations or usage while a server may be writing: it creates no
// file (not the database, not its -wal or -shm), runs no migration, changes
// nothing, reads the previous release's schema (version 5) as it is, and
// reports a database of an older or newer schema ([ErrSchemaTooOld],
// [ErrSchemaTooNew]) or a damaged file ([ErrCorrupt]).
// While a writer has the database open it reads the writer's latest commits
// through the -wal and -shm without writing to them; with none, it reads
// the main file with SQLite's immutable=1 and checks that the file did not
// change meanwhile (readonly.go explains how and the one race it leaves).
//
// A conversation whose person never comes back would stay on disk forever;
// [Store.Sweep] deletes every conversation inactive since a cutoff. The
// store is a [conversation.Sweeper], so [conversation.Memory.Sweep] runs it
// with the memory's own timeout and clock; the server calls that
// periodically, for this store and the JSON file alike, so there is one
// sweep and one timeout to configure.
package sqlite
