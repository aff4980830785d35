// Package storebench measures every conversation store against the floor of
// its storage, in one process and one run: History and SaveTurn of a
// 10-turn tool conversation through [conversation.Memory], and the store's
// own Get and Put, next to a bare read and a bare durable write of the same
// bytes (SQLite and PostgreSQL: the conversation's row read by its key, one
// row of its bytes written and committed; Redis: one GET, one SET; the JSON
// file: a read from the page cache, one atomic write of the whole file;
// memstore: a copy). Each benchmark reports the medians of both and their
// ratio, which holds still when the machine's load moves the absolute
// figures. BenchmarkColdDecode measures what reading a conversation that
// the memory has not cached adds to any store's Get, against one decode
// of the same bytes with no checks. The package holds no code besides its
// benchmarks; docs/benchmarks.md records the results.
package storebench
