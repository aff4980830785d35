// Package jsonfile is mombot's default conversation store: the original
// design's data/conversations.json, kept byte-compatible with the Python
// module that first wrote it.
//
// The file maps each phone to {"last_active": ..., "turns": [{"messages":
// [...]}, ...]}. last_active is written as Python's datetime.isoformat()
// writes a naive local time ("2026-02-24T10:35:00.123456"); both that and an
// RFC 3339 time with an offset are read. A conversation whose last_active
// cannot be read (or is missing) counts as expired, and its value is written
// back exactly as it was until the conversation is next accessed, which
// deletes it. Keys this package does not know, on a conversation or on a
// turn, and top-level members that are not conversations, are kept. The file is written with two-space indentation, like
// json.dump(..., indent=2).
//
// Every change rewrites the whole file atomically (a temporary file in the
// same folder, fsync, rename, fsync of the folder), with mode 0600, so a turn
// acknowledged by Append survives a crash at any instant and the file is never
// half written. The whole-file rewrite is the original's choice for one
// family: its cost grows with the file, and past [DefaultWarnSize] every save
// logs a warning to move to the sqlite store.
//
// The store never empties its memory because the file went away: if the file
// vanishes or stops parsing while the store is in use (another process moved
// a corrupt file aside, someone ran mv or rm), the conversations in memory are
// kept and served, a loud error is logged, and the next save writes them back.
// If another process writes a new file first, those of them it lacks are
// added to it once, and written at once. When the file only failed to parse
// while a writer that ignores the lock file was rewriting it in place, and
// is valid by the time the lock is held, nothing was lost and it is taken as
// it is: a conversation another process cleared stays cleared.
// To wipe every conversation, stop the processes that use the file first.
//
// The usage ledger ([conversation.UsageLedger]) is a file of its own next to
// the conversations ([UsagePath]: conversations.usage.json), never a member
// of conversations.json, which the original reads as phones only. It has its
// own lock file and is rewritten atomically on every addition, like the
// conversations file; clearing or expiring a conversation leaves it alone.
//
// The file lock relies on flock(2); the package supports Linux and other Unix
// systems.
package jsonfile
