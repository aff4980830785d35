// Package ptytest opens pseudo-terminals for tests of what a program does
// on a terminal: a logger's format, a chat's prompts. Where the system has
// none, the test that asks for one is skipped with a message.
package ptytest
