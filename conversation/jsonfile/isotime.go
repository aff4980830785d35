package jsonfile

import (
	"fmt"
	"time"
)

// formatTime writes t the way Python's datetime.isoformat() writes a naive
// local time, which is what the original module stores and reads back:
// "2026-02-24T10:35:00.123456", or without the fraction when the microseconds
// are zero.
func formatTime(t time.Time, loc *time.Location) string {
	t = t.In(loc)
	s := t.Format("2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += fmt.Sprintf(".%06d", us)
	}
	return s
}

// naiveLayouts are the offset-free forms Python's datetime.fromisoformat
// reads and isoformat writes; a fraction of any length is accepted.
var naiveLayouts = []string{
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
}

// parseTime reads a last_active value: a naive ISO-8601 time, taken to be in
// loc as the original wrote it, or an RFC 3339 time with an offset. A naive
// time that a daylight-saving change makes ambiguous is read as the first of
// its two instants.
//
// Times outside the years 1 to 9999 in loc are refused: Python's datetime
// cannot hold them, so they could not be written back in its format.
func parseTime(s string, loc *time.Location) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	for _, layout := range naiveLayouts {
		if err == nil {
			break
		}
		t, err = time.ParseInLocation(layout, s, loc)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("last_active %q is not an ISO-8601 time", s)
	}
	if y := t.In(loc).Year(); y < 1 || y > 9999 {
		return time.Time{}, fmt.Errorf("last_active %q is outside the years 1 to 9999", s)
	}
	return t.Truncate(time.Microsecond), nil
}
