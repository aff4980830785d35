package logging

import (
	"fmt"
	"log/slog"
	"strconv"
	"unicode/utf8"
)

// DefaultMaxValueBytes bounds every value a logger of [New] writes,
// unless Options.MaxValueBytes says otherwise: room for any error and a
// panic's stack of a few dozen frames, but not for what a stranger puts in
// a request.
const DefaultMaxValueBytes = 4096

// bound returns the ReplaceAttr function that cuts every value, and the
// message, to at most max bytes (a cut value ends in a note of its whole
// length), whatever the level of the record: strings, errors and any other
// value as the handler would format it. Numbers, times, durations and
// booleans are short by nature and kept.
func bound(max int) func([]string, slog.Attr) slog.Attr {
	return func(_ []string, a slog.Attr) slog.Attr {
		switch a.Value.Kind() {
		case slog.KindString:
			if s := a.Value.String(); len(s) > max {
				a.Value = slog.StringValue(cut(s, max))
			}
		case slog.KindAny:
			var s string
			switch v := a.Value.Any().(type) {
			case error:
				s = v.Error()
			default:
				s = fmt.Sprintf("%+v", v)
			}
			if len(s) > max {
				a.Value = slog.StringValue(cut(s, max))
			}
		}
		return a
	}
}

// cut returns the first max bytes of s, ended at a character's start,
// and a note of how long s was.
func cut(s string, max int) string {
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…[" + strconv.Itoa(len(s)) + " bytes, cut]"
}
