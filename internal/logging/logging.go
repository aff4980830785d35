package logging

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"golang.org/x/term"
)

// Format is how log records are written.
type Format int

const (
	// Auto writes text to a terminal and JSON anywhere else. It is the
	// zero value.
	Auto Format = iota
	// Text writes slog's key=value lines.
	Text
	// JSON writes one JSON object a line.
	JSON
)

// String returns the word ParseFormat reads: "auto", "text" or "json".
func (f Format) String() string {
	switch f {
	case Auto:
		return "auto"
	case Text:
		return "text"
	case JSON:
		return "json"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ErrUnknownLevel is wrapped by ParseLevel's error for a word that names no
// level.
var ErrUnknownLevel = errors.New("not a level")

// ErrUnknownFormat is wrapped by ParseFormat's error for a word that names
// no format.
var ErrUnknownFormat = errors.New("not a format")

// ParseLevel reads a level: debug, info, warn (or warning) or error, in any
// case and with spaces around it. Any other word, the empty one included,
// is an error wrapping ErrUnknownLevel that names the choices on one line.
func ParseLevel(s string) (slog.Level, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	default:
		return 0, fmt.Errorf("%q: %w; use debug, info, warn or error", clip(v), ErrUnknownLevel)
	}
}

// ParseFormat reads a format: text or json in any case, and the empty
// string (or auto) as Auto. Any other word is an error wrapping
// ErrUnknownFormat that names the choices on one line.
func ParseFormat(s string) (Format, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "", "auto":
		return Auto, nil
	case "text":
		return Text, nil
	case "json":
		return JSON, nil
	default:
		return Auto, fmt.Errorf("%q: %w; use text or json", clip(v), ErrUnknownFormat)
	}
}

// clip shortens a mistaken value so that the error stays one short line
// (and a secret pasted into the wrong variable is not printed whole).
func clip(s string) string {
	if r := []rune(s); len(r) > 20 {
		return string(r[:20]) + "..."
	}
	return s
}

// Options are a logger's settings. The zero value is the defaults: info,
// in the Auto format.
type Options struct {
	// Level is the lowest level written; nil means slog.LevelInfo.
	Level slog.Leveler
	// Format is how records are written; Auto decides by the writer.
	Format Format
	// MaxValueBytes bounds every value written, and the message; 0 means
	// DefaultMaxValueBytes.
	MaxValueBytes int
}

// New returns a logger writing to w with the options (nil means the
// defaults). Durations are written as strings like "24h0m0s" in either
// format. Every value, and the message, is cut to MaxValueBytes at every
// level, so that no record is much longer than a few of them however
// large what it reports: a request's field, an error quoting an answer.
// The logger is safe for concurrent use, as slog's handlers are; w must
// be too, or be written by this logger only.
func New(w io.Writer, opts *Options) *slog.Logger {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxValueBytes <= 0 {
		o.MaxValueBytes = DefaultMaxValueBytes
	}
	bounded := bound(o.MaxValueBytes)
	replace := func(groups []string, a slog.Attr) slog.Attr {
		return bounded(groups, durationString(groups, a))
	}
	ho := &slog.HandlerOptions{Level: o.Level, ReplaceAttr: replace}
	if ResolveFormat(o.Format, w) == JSON {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

// durationString writes a duration as Go writes it, "24h0m0s", which the
// text format does already and JSON would write as a number of
// nanoseconds (86400000000000) nobody reads at a glance.
func durationString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// ResolveFormat returns the format records written to w get: f itself,
// or for Auto, Text when w is a terminal and JSON otherwise.
func ResolveFormat(f Format, w io.Writer) Format {
	if f != Auto {
		return f
	}
	if IsTerminal(w) {
		return Text
	}
	return JSON
}

// IsTerminal reports whether f, a writer or a reader, is a terminal: an
// *os.File (or anything with a file descriptor) open on a tty. A buffer, a
// pipe or a regular file is not.
func IsTerminal(f any) bool {
	fd, ok := f.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(fd.Fd()))
}
