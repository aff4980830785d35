package jsonfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
)

var _ conversation.RecentMessages = (*Store)(nil)

// The recent messages ([conversation.RecentMessages]) live in a file of
// their own next to the conversations, never inside conversations.json: the
// Python original reads every top-level member of that file as a phone. For
// data/conversations.json it is data/conversations.recent.json:
//
//	{
//	  "recent": {
//	    "+14155551234": [
//	      {"id": "wamid.…", "role": "assistant", "text": "Here are 3 recipes: …", "at": "2026-02-24T18:35:00.123456Z"}
//	    ]
//	  }
//	}
//
// Each phone's messages are oldest first; times are RFC 3339 in UTC with
// microseconds. Top-level keys other than "recent" are kept. The file is
// kept as every sibling file is (see sibling): every change rewrites it
// atomically, mode 0600, holding its own lock file (the file's path +
// ".lock"), so that a change never waits for, or delays, a save of a
// conversation; a reader needs no lock, and the file, small (at most
// conversation.MaxRecentPerPhone messages of a few hundred bytes a person),
// is parsed once and read again only when it was replaced. A file that
// does not parse is moved aside, under the lock, to path +
// ".corrupt-<time>" with an error in the log, and remembering starts anew;
// it is never overwritten.

// RecentPath returns the recent messages' file for the conversations file
// at path: its name with ".json" replaced by ".recent.json", in the same
// folder.
func RecentPath(path string) string {
	return siblingPath(path, ".recent.json")
}

// recentEntry is one message in the file.
type recentEntry struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	Text string `json:"text"`
	At   string `json:"at"`
}

const recentTimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// recentFile is the file's content.
type recentFile struct {
	phones map[string][]conversation.RecentMessage
	other  map[string]json.RawMessage // other top-level keys, kept
}

// parseRecent reads the file. Every phone and message is checked as
// RememberMessages checks them, so that what is recalled is what could
// have been remembered.
func parseRecent(data []byte) (*recentFile, error) {
	f := &recentFile{phones: map[string][]conversation.RecentMessage{}}
	var err error
	if f.other, err = parseObject(data); err != nil {
		return nil, err
	}
	raw, ok := f.other["recent"]
	if !ok {
		return f, nil
	}
	delete(f.other, "recent")
	var phones map[string][]recentEntry
	if err := json.Unmarshal(raw, &phones); err != nil {
		return nil, fmt.Errorf("recent: %w", err)
	}
	for num, entries := range phones {
		if err := conversation.CheckPhone(num); err != nil {
			return nil, fmt.Errorf("recent: %w", err)
		}
		msgs := make([]conversation.RecentMessage, 0, len(entries))
		for i, e := range entries {
			at, err := time.Parse(time.RFC3339Nano, e.At)
			if err != nil {
				return nil, fmt.Errorf("recent of %s, message %d: %q is not an RFC 3339 time", phone.Mask(num), i, e.At)
			}
			m := conversation.RecentMessage{ID: e.ID, Role: e.Role, Text: conversation.ClipRecentText(e.Text), At: at}
			if err := conversation.CheckRecent(m); err != nil {
				return nil, fmt.Errorf("recent of %s, message %d: %w", phone.Mask(num), i, err)
			}
			msgs = append(msgs, m)
		}
		if len(msgs) > 0 {
			f.phones[num] = msgs
		}
	}
	return f, nil
}

// render writes the file: phones sorted, one message a line, then the
// other top-level keys.
func (f *recentFile) render() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\n  \"recent\": {")
	for i, phone := range sortedKeys(f.phones) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.Write(quote(phone))
		b.WriteString(": [")
		for j, m := range f.phones[phone] {
			if j > 0 {
				b.WriteByte(',')
			}
			line, err := json.Marshal(recentEntry{ID: m.ID, Role: m.Role, Text: m.Text, At: m.At.UTC().Format(recentTimeLayout)})
			if err != nil {
				return nil, err
			}
			b.WriteString("\n      ")
			b.Write(line)
		}
		b.WriteString("\n    ]")
	}
	b.WriteString("\n  }")
	out, err := appendOther(b.Bytes(), f.other)
	if err != nil {
		return nil, err
	}
	return append(out, "\n}\n"...), nil
}

// newRecent returns the recent messages kept beside the conversations file
// at path.
func newRecent(path string, log *slog.Logger, readOnly bool) *sibling[*recentFile] {
	return &sibling[*recentFile]{
		path: RecentPath(path), what: "the recent messages", name: "the recent messages file", log: log, readOnly: readOnly,
		anew:   "jsonfile: the recent messages file does not parse; it was moved aside and remembering starts anew",
		empty:  func() *recentFile { return &recentFile{phones: map[string][]conversation.RecentMessage{}} },
		parse:  parseRecent,
		render: (*recentFile).render,
	}
}

// RememberMessages implements [conversation.RecentMessages].
func (s *Store) RememberMessages(_ context.Context, phone string, now time.Time, msgs ...conversation.RecentMessage) error {
	add, skip, err := conversation.CheckRemember(phone, now, msgs)
	if err != nil {
		return fmt.Errorf("jsonfile: remember messages: %w", err)
	}
	if skip {
		return nil
	}
	err = s.recent.change(func(f *recentFile) (bool, error) {
		kept := f.phones[phone]
		for _, m := range add {
			i := indexRecent(kept, m.ID)
			if i >= 0 {
				kept[i] = m
			} else {
				kept = append(kept, m)
			}
		}
		f.phones[phone] = conversation.PruneRecent(kept, now)
		// Other people's messages past the window go too, so that the
		// file does not keep a person's who stopped writing.
		for p, ms := range f.phones {
			if p != phone && len(ms) > 0 && conversation.RecentExpired(ms[len(ms)-1].At, now) {
				delete(f.phones, p)
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("jsonfile: remember messages: %w", err)
	}
	return nil
}

// RecallMessage implements [conversation.RecentMessages].
func (s *Store) RecallMessage(_ context.Context, phone, id string, now time.Time) (conversation.RecentMessage, error) {
	var found conversation.RecentMessage
	err := s.recent.view(func(f *recentFile) error {
		ms := f.phones[phone]
		if i := indexRecent(ms, id); i >= 0 && !conversation.RecentExpired(ms[i].At, now) {
			found = ms[i]
			return nil
		}
		return conversation.ErrNotFound
	})
	if err != nil {
		return conversation.RecentMessage{}, fmt.Errorf("jsonfile: recall message: %w", err)
	}
	return found, nil
}

// ForgetMessages implements [conversation.RecentMessages]. Without a
// recent messages file it creates nothing.
func (s *Store) ForgetMessages(_ context.Context, phone string) error {
	var err error
	if _, serr := os.Stat(s.recent.path); errors.Is(serr, fs.ErrNotExist) {
		// Nothing to forget, and nothing to create: only a closed store
		// is an error.
		err = s.recent.view(func(*recentFile) error { return nil })
	} else {
		err = s.recent.change(func(f *recentFile) (bool, error) {
			if _, ok := f.phones[phone]; !ok {
				return false, nil
			}
			delete(f.phones, phone)
			return true, nil
		})
	}
	if err != nil {
		return fmt.Errorf("jsonfile: forget messages: %w", err)
	}
	return nil
}

func indexRecent(ms []conversation.RecentMessage, id string) int {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].ID == id {
			return i
		}
	}
	return -1
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
