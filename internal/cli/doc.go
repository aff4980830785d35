// Package cli holds what mombot's commands show a person at a terminal
// beyond their flags: the "did you mean" for a mistyped command
// ([DidYouMean], by edit distance), a progress bar drawn only on a
// terminal ([NewProgress]), and counted nouns ([Plural]). Parsing flags and
// choosing exit statuses stay in cmd/mombot, which is the command.
//
// The package uses the standard library and golang.org/x/term only.
package cli
