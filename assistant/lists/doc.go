// Package lists is the family's shared lists (grocery, to-do, packing...)
// and the assistant tools that read and change them, the built-in tool set
// that needs no outside account.
//
// The lists are kept in the conversation store, as one record of kind
// [conversation.Lists] ([conversation.FamilyLists]), so every store keeps
// them and every process and replica that shares a store shares them.
// Every operation reads them afresh and every change is written on the
// condition that nobody wrote them since it read them
// ([conversation.Memory.UpdateFamilyLists]); a change that lost that race
// is read and applied again, so two changes never lose each other. The
// rules below are this package's, written once here; the stores keep what
// they are given.
//
// Items are numbered from 1 in the order they were added, as [Tools] show
// them, so a follow-up like "remove the second one" names a position the
// model has seen. A list holds an item once, ignoring case.
//
// The lists are bounded (MaxLists, MaxItems, MaxNameLen, MaxItemLen,
// MaxBytes): a change past a limit is refused whole with an error wrapping
// [ErrLimit] that tells the model which limit and what to do. Removing is
// never refused; removed items are kept for [KeepRemoved] with who removed
// them ([Removed]), list_show tells a member what others removed lately,
// and list_restore ([Store.Restore]) puts them back, so a removal by
// mistake, or by a model misled by a document, can be undone.
//
// Releases before the lists moved into the store kept them in a file,
// lists.json in the data folder. [Store.Import] merges such a file into
// the store once and renames it lists.json.imported; each replica's file
// merges into the same lists, an item in several kept once.
package lists
