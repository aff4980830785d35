// Package cli is the command line's part of mombot's commands that is not
// about any one command: flags that may come anywhere among the words
// ([ParseInterleaved]), mistakes said in one line ([UsageError], for exit
// status 2) rather than the whole usage text, the "did you mean" for a
// mistyped command ([DidYouMean], by edit distance), the check of an
// address to listen on ([CheckListen]), a progress bar drawn
// only on a terminal ([NewProgress]), and counted nouns ([Plural]).
//
// The package uses the standard library, and internal/logging's
// IsTerminal, the one test of a terminal that the logger's format and the
// progress bar share.
package cli
