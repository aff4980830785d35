package conversation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The stored form of a conversation is the object the original design keeps
// under a phone in conversations.json:
//
//	{"last_active":"2026-02-24T10:35:00.123456","turns":[{"messages":[...]}, ...]}
//
// followed by any other keys the object had, in sorted order. last_active is
// written as Python's datetime.isoformat() writes a naive time in the
// memory's location ([Options.Location]), and read in that form or as RFC
// 3339 with an offset.

// encodeConversation returns c's stored form.
func encodeConversation(c Conversation, loc *time.Location) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(encodedSize(c))
	b.WriteString(`{"last_active":`)
	switch {
	case !c.LastActive.IsZero():
		b.Write(quote(formatTime(c.LastActive, loc)))
	case c.rawTime != nil:
		b.Write(c.rawTime)
	default:
		b.WriteString("null")
	}
	b.WriteString(`,"turns":[`)
	for i, t := range c.Turns {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := t.encode(&b, t.checked != nil); err != nil {
			return nil, err
		}
	}
	b.WriteByte(']')
	if err := encodeExtra(&b, c.Extra, "last_active", "turns"); err != nil {
		return nil, fmt.Errorf("conversation %w", err)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encodedSize returns at least the length of c's stored form, but for
// escapes in a role or a key, so that the buffer encodeConversation writes
// it to is made once and never grows: growing copies all written so far,
// which for a conversation of 27 kB cost as much as the rest of a save.
func encodedSize(c Conversation) int {
	size := 64 + len(c.rawTime) + extraSize(c.Extra) // {"last_active":"...","turns":[ ]}
	for _, t := range c.Turns {
		size += 16 + extraSize(t.Extra) // {"messages":[ ]},
		for _, m := range t.Messages {
			size += 24 + len(m.Role) + len(m.Content) + extraSize(m.Extra) // {"role":"","content":},
		}
	}
	return size
}

// extraSize returns at least the length of extra's members as
// encodeExtra writes them, but for escapes in a key.
func extraSize(extra map[string]json.RawMessage) int {
	n := 0
	for k, v := range extra {
		n += len(k) + len(v) + 4 // ,"k":v
	}
	return n
}

// formatTime writes t as Python's datetime.isoformat() writes a naive time
// in loc: microseconds only when there are any.
func formatTime(t time.Time, loc *time.Location) string {
	t = t.In(loc)
	s := t.Format("2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += fmt.Sprintf(".%06d", us)
	}
	return s
}

var naiveLayouts = []string{
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
}

// parseTime reads an ISO 8601 time: RFC 3339 with an offset, or naive in loc.
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

// CheckRecord returns an error unless rec is a record of kind as [Memory]
// writes it, within lim: a conversation that reads back whole (every turn
// valid for the API, a readable last activity, at most lim.MaxTurns turns
// when that is set, tool_use ids unique across its turns), recent messages
// that are each valid, unique by id and at most [MaxRecentPerPhone], or a
// day's usage under a "YYYY-MM-DD/phone" key (the phone [Anonymous] for a
// day's total) with no negative count, or the family's lists as
// [Memory.UpdateFamilyLists] writes them. It is
// the invariant a store's contents keep, which the conformance suite checks
// after every case.
func CheckRecord(kind Kind, rec Record, lim Limits) error {
	switch kind {
	case Conversations:
		c, dropped, err := decodeConversation(rec.Key, rec, time.UTC)
		switch {
		case err != nil:
			return err
		case dropped > 0:
			return fmt.Errorf("conversation of %s: %d turns the API would refuse", rec.Key, dropped)
		case c.LastActive.IsZero():
			return fmt.Errorf("conversation of %s: no readable last_active", rec.Key)
		case lim.MaxTurns > 0 && len(c.Turns) > lim.MaxTurns:
			return fmt.Errorf("conversation of %s: %d turns, the cap is %d", rec.Key, len(c.Turns), lim.MaxTurns)
		}
		seen := map[string]bool{}
		for _, t := range c.Turns {
			for _, id := range t.toolUseIDs() {
				if seen[id] {
					return fmt.Errorf("conversation of %s: tool_use id %s twice", rec.Key, id)
				}
				seen[id] = true
			}
		}
	case Recent:
		var msgs []recentJSON
		if err := json.Unmarshal(rec.Data, &msgs); err != nil {
			return fmt.Errorf("recent messages of %s: %w", rec.Key, err)
		}
		if len(msgs) == 0 || len(msgs) > MaxRecentPerPhone {
			return fmt.Errorf("recent messages of %s: %d of them, want 1 to %d", rec.Key, len(msgs), MaxRecentPerPhone)
		}
		ids := map[string]bool{}
		for _, m := range msgs {
			if err := checkRecent(RecentMessage(m)); err != nil {
				return fmt.Errorf("recent messages of %s: %w", rec.Key, err)
			}
			if ids[m.ID] {
				return fmt.Errorf("recent messages of %s: id %s twice", rec.Key, m.ID)
			}
			ids[m.ID] = true
		}
	case UsageDays:
		day, phone, ok := strings.Cut(rec.Key, "/")
		if _, err := time.Parse(UsageDayLayout, day); err != nil || !ok || CheckPhone(phone) != nil {
			return fmt.Errorf("usage record %q: want a key YYYY-MM-DD/phone", rec.Key)
		}
		var u Usage
		if err := json.Unmarshal(rec.Data, &u); err != nil {
			return fmt.Errorf("usage record %q: %w", rec.Key, err)
		}
		return u.Check()
	case Notes:
		return checkNotes(rec)
	case Summaries:
		return checkSummary(rec)
	case Lists:
		return checkLists(rec)
	default:
		return fmt.Errorf("unknown kind %q", kind)
	}
	return nil
}
