package jsonfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/atomicfile"
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
// microseconds. Top-level keys other than "recent" are kept. Every change
// rewrites the file atomically (package atomicfile, mode 0600) while holding
// its own lock file (the file's path + ".lock"), opened for each change, so
// that the writers of every process and goroutine are ordered and a change
// never waits for, or delays, a save of a conversation. A reader needs no
// lock: the file is only ever replaced whole. The file is small (at most
// conversation.MaxRecentPerPhone messages of a few hundred bytes a person);
// it is parsed once and read again only when it was replaced (recentCache).
//
// A file that does not parse is moved aside, under the lock, to path +
// ".corrupt-<time>" with an error in the log, and remembering starts anew;
// it is never overwritten.

// RecentPath returns the recent messages' file for the conversations file
// at path: its name with ".json" replaced by ".recent.json", in the same
// folder.
func RecentPath(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, strings.TrimSuffix(base, ".json")+".recent.json")
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
	if err := json.Unmarshal(data, &f.other); err != nil {
		return nil, err
	}
	if f.other == nil {
		return nil, errors.New("not a JSON object")
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
	for _, k := range sortedKeys(f.other) {
		b.WriteString(",\n  ")
		b.Write(quote(k))
		b.WriteString(": ")
		var c bytes.Buffer
		if err := json.Compact(&c, f.other[k]); err != nil {
			return nil, err
		}
		b.Write(c.Bytes())
	}
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

// recentCache is the recent messages file as last read or written, so
// that a call reads the file again only when another process (or a call
// of this one) replaced it: one stat(2) otherwise.
type recentCache struct {
	mu    sync.Mutex
	file  *recentFile // never changed in place; nil: not read
	stamp stamp

	tempsGone atomic.Bool // a killed writer's temporary files were removed
	closed    atomic.Bool // the store was closed
}

// readRecent returns the file's content, which the caller must not change
// (see clone); a missing file is an empty one. A file that does not parse
// is reported with errCorruptRecent.
func (s *Store) readRecent() (*recentFile, error) {
	if s.recent.closed.Load() {
		return nil, ErrClosed
	}
	path := RecentPath(s.path)
	st, err := statPath(path)
	if err != nil {
		return nil, err
	}
	if !st.exists {
		return &recentFile{phones: map[string][]conversation.RecentMessage{}}, nil
	}
	c := &s.recent
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file != nil && c.stamp == st {
		return c.file, nil
	}
	// The stamp is taken from the open file, so that it is the stamp of
	// the bytes read even if the file is replaced meanwhile.
	fd, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &recentFile{phones: map[string][]conversation.RecentMessage{}}, nil
	}
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(fd)
	if err != nil {
		return nil, err
	}
	f, err := parseRecent(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCorruptRecent, err)
	}
	c.file, c.stamp = f, stampOf(fi)
	return f, nil
}

// clone returns a copy of f that can be changed.
func (f *recentFile) clone() *recentFile {
	c := &recentFile{phones: make(map[string][]conversation.RecentMessage, len(f.phones)), other: f.other}
	for p, ms := range f.phones {
		c.phones[p] = slices.Clone(ms)
	}
	return c
}

var errCorruptRecent = errors.New("the recent messages file does not parse")

// changeRecent applies change to the file under its lock and writes the
// result. A file that does not parse is moved aside first. A read-only
// store changes nothing, and creates no file, not even the lock file.
func (s *Store) changeRecent(change func(*recentFile) bool) error {
	if s.recent.closed.Load() {
		return ErrClosed
	}
	if s.readOnly {
		return ErrReadOnly
	}
	path := RecentPath(s.path)
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := lockFile(lock); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer unlockFile(lock)
	if !s.recent.tempsGone.Swap(true) {
		// Under the lock no writer is using a temporary file: any left
		// is a killed writer's.
		if n, err := atomicfile.RemoveTemps(path); err != nil {
			s.log.Warn("jsonfile: removing the recent messages' leftover temporary files", "path", path, "removed", n, "err", err)
		}
	}
	f, err := s.readRecent()
	if errors.Is(err, errCorruptRecent) {
		aside := path + ".corrupt-" + time.Now().Format("20060102T150405.000000")
		if rerr := os.Rename(path, aside); rerr != nil {
			return fmt.Errorf("%w; moving it aside: %w", err, rerr)
		}
		s.log.Error("jsonfile: the recent messages file does not parse; it was moved aside and remembering starts anew",
			"path", path, "moved_to", aside, "err", err)
		f, err = &recentFile{phones: map[string][]conversation.RecentMessage{}}, nil
	}
	if err != nil {
		return err
	}
	f = f.clone()
	if !change(f) {
		return nil
	}
	data, err := f.render()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		return err
	}
	// The lock file is held: nobody replaces the file before the stat.
	if st, err := statPath(path); err == nil && st.exists {
		s.recent.mu.Lock()
		s.recent.file, s.recent.stamp = f, st
		s.recent.mu.Unlock()
	}
	return nil
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
	err = s.changeRecent(func(f *recentFile) bool {
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
		return true
	})
	if err != nil {
		return fmt.Errorf("jsonfile: remember messages: %w", err)
	}
	return nil
}

// RecallMessage implements [conversation.RecentMessages].
func (s *Store) RecallMessage(_ context.Context, phone, id string, now time.Time) (conversation.RecentMessage, error) {
	f, err := s.readRecent()
	if err != nil {
		return conversation.RecentMessage{}, fmt.Errorf("jsonfile: recall message: %w", err)
	}
	ms := f.phones[phone]
	if i := indexRecent(ms, id); i >= 0 && !conversation.RecentExpired(ms[i].At, now) {
		return ms[i], nil
	}
	return conversation.RecentMessage{}, fmt.Errorf("jsonfile: recall message: %w", conversation.ErrNotFound)
}

// ForgetMessages implements [conversation.RecentMessages]. Without a
// recent messages file it creates nothing.
func (s *Store) ForgetMessages(_ context.Context, phone string) error {
	if s.recent.closed.Load() {
		return fmt.Errorf("jsonfile: forget messages: %w", ErrClosed)
	}
	if _, err := os.Stat(RecentPath(s.path)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err := s.changeRecent(func(f *recentFile) bool {
		if _, ok := f.phones[phone]; !ok {
			return false
		}
		delete(f.phones, phone)
		return true
	})
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
