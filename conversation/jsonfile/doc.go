// Package jsonfile is mombot's default [conversation.Store]: JSON files in
// one folder, the first of them the original design's
// data/conversations.json, which the Python module that first wrote it
// reads and writes too.
//
// Each kind of record is one file, a JSON object with a member per record:
// the key, and the record's data as its value, byte for byte. The
// conversations are conversations.json itself, keyed by phone, each value
// the conversation object the Python original keeps there (package
// conversation encodes it). Every other kind is a file beside it named
// after the kind: conversations.recent.json, conversations.usage.json, and
// conversations.<kind>.json for any other kind (lower-case letters, digits,
// - and _). A member another program wrote is returned as it is written,
// white space included, and written back unchanged when the file is
// rewritten for another record. mombot writes one member a line, sorted by
// key.
//
// A record's version is a hash (FNV-64a) of its bytes as stored, so a
// conditional write compares values: a write of the very bytes already
// stored keeps their version, which is harmless, since whoever read that
// version read those bytes. Put's keep is ignored; records stay until they
// are deleted.
//
// Every change rewrites the whole file atomically (package atomicfile: a
// temporary file in the same folder, fsync, rename, fsync of the folder),
// with mode 0600, so a write that returned survives a crash at any instant
// and a file is never half written. A store that may write removes the
// temporary files of writes that were killed when it opens.
//
// Several processes may use the files at once. A lock file
// (conversations.json.lock) orders the writers of every process: each
// change reads the file again under it if the file changed, applies itself
// and writes. The file on disk is the truth; a store keeps the last version
// it read or wrote in memory and notices any other by one stat(2) per call
// (it holds that version open, so its inode number is not reused).
//
// A file that does not parse, or is empty, is moved aside by a store that
// may write, under the lock file, to its name + ".corrupt-<time>", with an
// error in the log, and that file starts anew; it is never overwritten. A
// read-only store (Options.ReadOnly) creates, moves and removes nothing,
// takes no lock and reports such a file as an error wrapping ErrCorrupt.
//
// The lock relies on flock(2): the package supports Linux and other Unix
// systems, on local file systems.
package jsonfile
