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
//
// The lists are bounded (MaxLists, MaxItems, MaxNameLen, MaxItemLen,
// MaxFileBytes): a change past a limit is refused whole with an error
// wrapping [ErrLimit] that tells the model which limit and what to do.
// Removing is never refused; removed items are kept for [KeepRemoved] with
// who removed them ([Removed]), list_show tells a member what others
// removed lately, and list_restore ([Store.Restore]) puts them back, so a
// removal by mistake, or by a model misled by a document, can be undone.
package lists
