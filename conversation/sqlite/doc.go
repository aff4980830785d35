// Package sqlite is a [conversation.Store] on an SQLite database file, for a
// service that holds more records than a JSON file should rewrite on every
// save. It uses modernc.org/sqlite, a pure Go SQLite, so the binary needs no
// cgo.
//
// Every record is a row of one table, records (kind, key, data, version),
// keyed by kind and key. A Put or a Delete is one statement, and so one
// transaction, conditioned on the version it was given (an INSERT that does
// nothing over an existing row, an UPDATE or DELETE of the row with that
// version); no rows changed is a conflict. Versions are random 63-bit
// numbers, so a record deleted and made anew does not get back a version of
// a value it had (but for a chance of 2^-63 a write). The store decides
// nothing about what it keeps: Put's keep is ignored, as
// [conversation.Memory.Sweep] deletes expired conversations and old recent
// messages itself.
//
// The database runs in WAL mode, so that readers and the writer do not wait
// for each other, with a busy timeout, so that several processes may share
// one file: writers queue on SQLite's lock instead of failing. Commits use
// synchronous=FULL: a write that returned nil is in the -wal and synced to
// disk, so it survives a crash of the process and a power cut (as far as
// the disk keeps what it was told to sync). secure_delete is on: the bytes
// of a deleted or replaced record are overwritten with zeros in the
// database file; until SQLite checkpoints and reuses the -wal, an earlier
// copy of the page may remain there, and the last connection to close
// removes it. The file and its -wal and -shm are created with mode 0600.
//
// A writer (the default) sets up or upgrades the schema as it opens the
// database, with the migrations embedded in the binary, in one transaction,
// recording the version in PRAGMA user_version and marking the file as
// mombot's in PRAGMA application_id. It refuses, and leaves as they are, a
// file that is not an SQLite database ([ErrCorrupt]), another program's
// database or one of a development version from before v0.1.0
// ([ErrSchemaUnknown]), and one of a newer mombot ([ErrSchemaTooNew]).
//
// [Options].ReadOnly opens a database only to read it, for the commands
// that look at records while a server may be writing. It creates no file
// (a missing database is an error wrapping fs.ErrNotExist), sets up or
// upgrades no schema, and reports the files a writer refuses, and a
// database of an older schema ([ErrSchemaTooOld]), leaving them as they
// are; a database without tables is an empty store. Its connections are
// read-write, never write a record (SQLite's query_only), and see every
// commit made before each read. Like any SQLite connection they share the
// -wal and -shm with a writer that runs, or create them while open and
// remove them as they close when none does, and after a writer was killed
// they recover its -wal: the commits it holds are read, and folded into the
// database file as the last connection closes.
package sqlite
