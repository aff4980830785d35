// Package storebench measures every conversation store against the floor of
// its storage, in one process and one run: History and SaveTurn of a
// 10-turn tool conversation next to a bare read and a bare durable write of
// the same bytes (SQLite: the conversation's rows read by their index, one
// row written and committed; Redis: one GET, one SET; PostgreSQL: one row
// read by its key, one row written and committed; the JSON file: a read
// from the page cache, one atomic write of the whole file). Each benchmark
// reports the medians of both and their ratio, which holds still when the
// machine's load moves the absolute figures. The package holds no code besides its
// benchmark; docs/benchmarks.md records the results.
package storebench
