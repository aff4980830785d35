// Package lists is the family's shared lists (grocery, to-do, packing...)
// and the assistant tools that read and change them, the built-in tool set
// that needs no outside account.
//
// The lists live in one JSON file, normally next to the conversations
// (data/lists.json). Every change rewrites it atomically (temporary file,
// fsync, rename, fsync of the folder; mode 0600), under a lock that is held
// across processes, and every operation reads the file afresh, so a server
// and `mombot ask` can share it.
//
// Items are numbered from 1 in the order they were added, as [Tools] show
// them, so a follow-up like "remove the second one" names a position the
// model has seen.
package lists
