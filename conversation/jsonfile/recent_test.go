package jsonfile_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
)

// The recent messages are a sibling file, never a member of
// conversations.json (the Python original reads every member as a phone),
// written with mode 0600, in a shape a person can read.
func TestRecentIsASiblingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 2, 24, 18, 35, 0, 123456000, time.UTC)
	m := conversation.RecentMessage{ID: "wamid.1", Role: conversation.RoleAssistant, Text: "Here are 3 recipes", At: now}
	if err := s.RememberMessages(ctx, "+14155551234", now, m); err != nil {
		t.Fatal(err)
	}
	if got, want := jsonfile.RecentPath(path), filepath.Join(filepath.Dir(path), "conversations.recent.json"); got != want {
		t.Fatalf("RecentPath = %s, want %s", got, want)
	}
	data, err := os.ReadFile(jsonfile.RecentPath(path))
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "recent": {
    "+14155551234": [
      {"id":"wamid.1","role":"assistant","text":"Here are 3 recipes","at":"2026-02-24T18:35:00.123456Z"}
    ]
  }
}
`
	if string(data) != want {
		t.Errorf("file:\n%s\nwant:\n%s", data, want)
	}
	if fi, err := os.Stat(jsonfile.RecentPath(path)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if conv, err := os.ReadFile(path); err == nil && strings.Contains(string(conv), "recent") {
		t.Errorf("conversations.json holds the recent messages:\n%s", conv)
	}
}

// A recent messages file that does not parse is moved aside, never
// overwritten, and remembering starts anew; a lookup meanwhile is an error,
// not a made-up answer.
func TestRecentCorruptFileMovedAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	if err := os.WriteFile(jsonfile.RecentPath(path), []byte(`{"recent": {"+14155551234": [{"id": 7}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	log, buf := logBuffer()
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	if _, err := s.RecallMessage(ctx, "+14155551234", "7", now); err == nil || errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("RecallMessage on a damaged file: %v, want an error other than ErrNotFound", err)
	}
	m := conversation.RecentMessage{ID: "wamid.2", Role: conversation.RoleUser, Text: "hi", At: now}
	if err := s.RememberMessages(ctx, "+14155551234", now, m); err != nil {
		t.Fatal(err)
	}
	aside, _ := filepath.Glob(jsonfile.RecentPath(path) + ".corrupt-*")
	if len(aside) != 1 || !strings.Contains(buf.String(), "moved aside") {
		t.Errorf("moved aside: %v; log: %s", aside, buf)
	}
	if got, err := s.RecallMessage(ctx, "+14155551234", "wamid.2", now); err != nil || got.Text != "hi" {
		t.Errorf("RecallMessage after: %+v, %v", got, err)
	}
	var v map[string]any
	if data, _ := os.ReadFile(jsonfile.RecentPath(path)); json.Unmarshal(data, &v) != nil {
		t.Errorf("the new file does not parse")
	}
}

// history clear on a store without a recent messages file creates none.
func TestForgetCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ForgetMessages(ctx, "+14155551234"); err != nil {
		t.Fatal(err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*recent*")); len(matches) != 0 {
		t.Errorf("ForgetMessages created %v", matches)
	}
}

// A read-only store (commands that only look) recalls the recent messages
// but never changes them: no file, lock file or moved-aside file appears.
func TestRecentReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	m := conversation.RecentMessage{ID: "wamid.1", Role: conversation.RoleUser, Text: "hi", At: now}
	for _, content := range []string{"", `{"recent": {"+14155551234": [{"id": 7}]}}`} {
		if content != "" {
			if err := os.WriteFile(jsonfile.RecentPath(path), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := filepath.Glob(filepath.Join(dir, "*"))
		s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RememberMessages(ctx, "+14155551234", now, m); !errors.Is(err, jsonfile.ErrReadOnly) {
			t.Errorf("RememberMessages on a read-only store (file %q): %v, want ErrReadOnly", content, err)
		}
		if _, err := s.RecallMessage(ctx, "+14155551234", "wamid.1", now); err == nil {
			t.Errorf("RecallMessage found a message a read-only store was given")
		}
		if err := s.ForgetMessages(ctx, "+14155551234"); content != "" && !errors.Is(err, jsonfile.ErrReadOnly) {
			t.Errorf("ForgetMessages on a read-only store (file %q): %v, want ErrReadOnly", content, err)
		}
		s.Close()
		if after, _ := filepath.Glob(filepath.Join(dir, "*")); !slices.Equal(before, after) {
			t.Errorf("a read-only store changed the folder (file %q): %v, was %v", content, after, before)
		}
		if data, _ := os.ReadFile(jsonfile.RecentPath(path)); string(data) != content {
			t.Errorf("the recent messages file holds %q, want %q", data, content)
		}
	}
}

// A closed store refuses the recent messages too.
func TestRecentClosed(t *testing.T) {
	s, err := jsonfile.Open(filepath.Join(t.TempDir(), "conversations.json"), &jsonfile.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	m := conversation.RecentMessage{ID: "wamid.1", Role: conversation.RoleUser, Text: "hi", At: now}
	if err := s.RememberMessages(ctx, "+14155551234", now, m); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.RememberMessages(ctx, "+14155551234", now, m); !errors.Is(err, jsonfile.ErrClosed) {
		t.Errorf("RememberMessages after Close: %v, want ErrClosed", err)
	}
	if _, err := s.RecallMessage(ctx, "+14155551234", "wamid.1", now); !errors.Is(err, jsonfile.ErrClosed) {
		t.Errorf("RecallMessage after Close: %v, want ErrClosed", err)
	}
	if err := s.ForgetMessages(ctx, "+14155551234"); !errors.Is(err, jsonfile.ErrClosed) {
		t.Errorf("ForgetMessages after Close: %v, want ErrClosed", err)
	}
}
