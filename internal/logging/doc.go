// Package logging builds mombot's process logger: a [log/slog] logger on
// stderr whose level and format come from the command's settings.
//
// The format is text (slog's key=value lines) or JSON (one object a line,
// with time, level and msg). Its zero value, [Auto], chooses by where the
// lines go: text when the writer is a terminal, for a person reading them,
// and JSON otherwise (a container's log, a pipe, a service manager's
// journal), for a machine to parse. [ParseLevel] and [ParseFormat] read
// the settings' words and refuse the others with one-line errors.
//
// Every value a record carries, and its message, is cut to a bound
// (DefaultMaxValueBytes) at every level, so that what a stranger sends,
// quoted in a log line, cannot fill the disk: the one place that bound is
// kept. [Throttle] bounds the other way a stranger could: how many records
// they cause, such as the refusals of their requests, which it writes
// once an interval with a count of the rest.
//
// The package holds no secrets and masks nothing: callers log secrets as
// set/unset and phone numbers masked (package phone) before a record gets
// here.
package logging
