package jsonfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storetest"
)

var ctx = context.Background()

// quiet is a logger for tests that do not look at the log.
var quiet = slog.New(slog.DiscardHandler)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "data", "conversations.json")
		return func() (conversation.Store, error) { return jsonfile.Open(path, &jsonfile.Options{Logger: quiet}) }
	})
}

// logBuffer returns a logger writing text lines to the returned buffer.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

// open opens the store at path with a memory whose clock reads at.
func open(t *testing.T, path string, at time.Time, opts *jsonfile.Options) (*jsonfile.Store, *conversation.Memory) {
	t.Helper()
	if opts == nil {
		opts = &jsonfile.Options{Logger: quiet}
	}
	s, err := jsonfile.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return at }, MaxTurns: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

// members returns the top-level members of the JSON object in the file at
// path, each as it is written there.
func members(t *testing.T, path string) map[string]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		t.Fatalf("%s is not a JSON object (%v):\n%s", path, err, data)
	}
	return m
}

func copyFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "conversations.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadsWhatPythonWrote reads a file the Python original wrote, and
// saves into it: the saved conversation keeps the keys mombot does not
// know, and the one it did not touch stays as Python wrote it, byte for
// byte.
func TestReadsWhatPythonWrote(t *testing.T) {
	path := copyFixture(t, "python_written.json")
	written := members(t, path)
	at := time.Date(2026, 2, 24, 10, 40, 0, 0, time.Local)
	_, mem := open(t, path, at, nil)
	h, err := mem.History(ctx, "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 6 {
		t.Fatalf("got %d messages, want 6", len(h))
	}
	// Python's \u escapes are kept as written: the bytes do not change.
	if got, want := string(h[2].Content), `[{"type":"tool_result","tool_use_id":"toolu_01A","content":"Found 5 recipes: 1. Lemon chicken \u00e0 la <grecque>"}]`; got != want {
		t.Fatalf("tool result bytes:\ngot  %s\nwant %s", got, want)
	}
	if got := h[5].Text(); got != "That looks like Salt Fat Acid Heat." {
		t.Fatalf("last message text = %q", got)
	}

	if err := mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("thanks", "you're welcome")); err != nil {
		t.Fatal(err)
	}
	file := members(t, path)
	if got, want := string(file["+14155555678"]), string(written["+14155555678"]); got != want {
		t.Fatalf("the conversation mombot did not touch changed:\ngot  %s\nwant %s", got, want)
	}
	var erin struct {
		LastActive string            `json:"last_active"`
		Nickname   string            `json:"nickname"`
		Turns      []json.RawMessage `json:"turns"`
	}
	if err := json.Unmarshal(file["+14155551234"], &erin); err != nil {
		t.Fatal(err)
	}
	if erin.Nickname != "Erin" || erin.LastActive != "2026-02-24T10:40:00" || len(erin.Turns) != 3 {
		t.Fatalf("after a save: nickname %q, last_active %q, %d turns", erin.Nickname, erin.LastActive, len(erin.Turns))
	}
	if !bytes.Contains(erin.Turns[1], []byte(`"note":"kept"`)) {
		t.Fatalf("the turn's extra key was dropped: %s", erin.Turns[1])
	}
	if !bytes.Contains(erin.Turns[0], []byte(`"sent_at":"2026-02-24T10:34:58"`)) {
		t.Fatalf("the message's extra key was dropped: %s", erin.Turns[0])
	}

	// 09:15 is more than 30 minutes before 10:40: expired, and deleted on
	// access.
	if h, _ := mem.History(ctx, "+14155555678"); len(h) != 0 {
		t.Fatalf("expired conversation returned %d messages", len(h))
	}
	if _, ok := members(t, path)["+14155555678"]; ok {
		t.Fatal("the conversation that expired on access is still in the file")
	}
}

func TestLastActiveFormats(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2026-02-24T10:35:00.123456", time.Date(2026, 2, 24, 10, 35, 0, 123456000, time.Local)},
		{"2026-02-24T10:35:00", time.Date(2026, 2, 24, 10, 35, 0, 0, time.Local)},
		{"2026-02-24 10:35:00.5", time.Date(2026, 2, 24, 10, 35, 0, 500000000, time.Local)},
		{"2026-02-24T10:35:00Z", time.Date(2026, 2, 24, 10, 35, 0, 0, time.UTC)},
		{"2026-02-24T10:35:00.25+02:00", time.Date(2026, 2, 24, 8, 35, 0, 250000000, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			doc := fmt.Sprintf(`{"+1": {"last_active": %q, "turns": [{"messages": [{"role": "user", "content": "hi"}]}]}}`, tt.in)
			path := filepath.Join(t.TempDir(), "c.json")
			os.WriteFile(path, []byte(doc), 0o600)
			_, mem := open(t, path, time.Now(), nil)
			c, err := mem.Load(ctx, "+1")
			if err != nil {
				t.Fatal(err)
			}
			if !c.LastActive.Equal(tt.want) {
				t.Fatalf("last active = %v, want %v", c.LastActive, tt.want)
			}
		})
	}
}

// TestUnreadableLastActiveKept: a conversation whose last_active cannot be
// read counts as expired, and until it is accessed it stays in the file
// exactly as it was, not with a made-up time (which Python's fromisoformat
// would refuse).
func TestUnreadableLastActiveKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	turn := `[{"messages": [{"role": "user", "content": "hi"}]}]`
	doc := `{
  "+1": {"last_active": "last tuesday", "turns": ` + turn + `},
  "+2": {"last_active": 1740393300, "turns": ` + turn + `},
  "+3": {"turns": ` + turn + `, "nickname": "Jo"},
  "+4": {"last_active": "0000-01-01T00:00:00", "turns": ` + turn + `}
}`
	os.WriteFile(path, []byte(doc), 0o600)
	before := members(t, path)
	_, mem := open(t, path, time.Now(), nil)
	sums, err := mem.List(ctx)
	if err != nil || len(sums) != 4 {
		t.Fatalf("List = %v, %v; want the 4 conversations", sums, err)
	}
	for _, sum := range sums {
		if !sum.Expired {
			t.Errorf("%s with an unreadable last_active is not expired", sum.Phone)
		}
	}
	if err := mem.SaveTurn(ctx, "+5", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	after := members(t, path)
	for _, phone := range []string{"+1", "+2", "+3", "+4"} {
		if string(after[phone]) != string(before[phone]) {
			t.Errorf("%s was rewritten: %s, was %s", phone, after[phone], before[phone])
		}
	}
	// Accessing one deletes it, as any expired conversation.
	if h, err := mem.History(ctx, "+1"); err != nil || len(h) != 0 {
		t.Fatalf("History(+1) = %d messages, %v; want none", len(h), err)
	}
	if _, err := mem.Load(ctx, "+1"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("the expired conversation was not deleted on access: %v", err)
	}
}

// TestEditedTurnsLeftOut: turns of a file edited by hand that the Messages
// API would reject are left out of the history, with a warning giving their
// count; the file keeps them until the conversation is next saved.
func TestEditedTurnsLeftOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	doc := `{
  "+1": {"last_active": "2026-02-24T10:35:00", "turns": [
    {"messages": [{"role": "user", "content": "valid"}, {"role": "assistant", "content": [{"type": "text", "text": "yes"}]}]},
    {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "orphan"}]}]},
    {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]}]},
    {"no messages": true},
    {"messages": [{"role": "user", "content": ""}]},
    {"messages": [{"role": "user", "content": "also valid"}]}
  ]}
}`
	os.WriteFile(path, []byte(doc), 0o600)
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	log, buf := logBuffer()
	mem, _ := conversation.New(s, &conversation.Options{Now: func() time.Time { return time.Date(2026, 2, 24, 10, 40, 0, 0, time.Local) }, Log: log})
	h, err := mem.History(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[0].Text() != "valid" || h[2].Text() != "also valid" {
		t.Fatalf("history = %d messages %v", len(h), h)
	}
	if !strings.Contains(buf.String(), "dropped=4") {
		t.Fatalf("the turns left out were not logged with their count:\n%s", buf)
	}
}

// TestKindsInFilesOfTheirOwn: conversations.json holds conversations only,
// since the Python original reads every member as a phone; every other kind
// is a JSON object of its own beside it, conversations.<kind>.json.
func TestKindsInFilesOfTheirOwn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	at := time.Date(2026, 2, 24, 10, 35, 0, 0, time.UTC)
	s, mem := open(t, path, at, nil)
	// What finds nothing to change writes nothing.
	if err := mem.Clear(ctx, "+14155551234"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Clear of nobody = %v, want ErrNotFound", err)
	}
	if got := storetest.Files(t, dir); len(got) != 1 {
		t.Fatalf("a store that changed nothing made %v, want only its lock file", got)
	}
	if err := mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("hi", "hello")); err != nil {
		t.Fatal(err)
	}
	if err := mem.AddUsage(ctx, "+14155551234", at, conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, InputTokens: 10}}); err != nil {
		t.Fatal(err)
	}
	if err := mem.Remember(ctx, "+14155551234", conversation.RecentMessage{ID: "wamid.1", Role: conversation.RoleUser, Text: "hi", At: at}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "notes_v2", conversation.Record{Key: "+14155551234/1", Data: []byte(`"buy milk"`)}, 0); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"conversations.json":          {"+14155551234"},
		"conversations.usage.json":    {"2026-02-24/+14155551234"},
		"conversations.recent.json":   {"+14155551234"},
		"conversations.notes_v2.json": {"+14155551234/1"},
	}
	for name, keys := range want {
		if got := slices.Sorted(maps.Keys(members(t, filepath.Join(dir, name)))); !slices.Equal(got, keys) {
			t.Errorf("%s holds %q, want %q", name, got, keys)
		}
	}
	files := storetest.Files(t, dir)
	delete(files, "conversations.json.lock")
	if len(files) != len(want) {
		t.Errorf("the folder holds %v, want the lock file and %d data files", files, len(want))
	}
	for _, kind := range []conversation.Kind{"", "Notes", "../x", "a/b", "a.b"} {
		if _, err := s.Put(ctx, kind, conversation.Record{Key: "k", Data: []byte(`1`)}, 0); err == nil {
			t.Errorf("Put of kind %q succeeded; a kind names a file", kind)
		}
	}
}

// TestRecordBytesKept: a record's data is its member's value in the file,
// byte for byte, and its version is the same for every store that reads
// those bytes; data that is not one JSON value, and keys that JSON cannot
// hold, are refused.
func TestRecordBytesKept(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	s, _ := open(t, path, time.Now(), nil)
	data := "{ \"a\" : [ 1, 2 ],\n \"b\": \"<&> \\u00e9\" }"
	v, err := s.Put(ctx, "kind-a", conversation.Record{Key: "k<&>", Data: []byte(data)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(members(t, filepath.Join(dir, "conversations.kind-a.json"))["k<&>"]); got != data {
		t.Fatalf("the file holds %q, want the data as given, %q", got, data)
	}
	other, _ := open(t, path, time.Now(), nil)
	r, err := other.Get(ctx, "kind-a", "k<&>")
	if err != nil || string(r.Data) != data || r.Version != v {
		t.Fatalf("another store reads %q v%d (%v), want %q v%d", r.Data, r.Version, err, data, v)
	}
	for _, bad := range []string{``, `{"a":`, `1 2`, `{}x`, "\"\x00\""} {
		if _, err := s.Put(ctx, "kind-a", conversation.Record{Key: "bad", Data: []byte(bad)}, 0); err == nil {
			t.Errorf("Put of %q succeeded; it is not one JSON value", bad)
		}
	}
	for _, key := range []string{"", "\xff", strings.Repeat("k", conversation.MaxKeyLen+1)} {
		if _, err := s.Put(ctx, "kind-a", conversation.Record{Key: key, Data: []byte(`1`)}, 0); err == nil {
			t.Errorf("Put under the key %q succeeded", key)
		}
	}
	if got := members(t, filepath.Join(dir, "conversations.kind-a.json")); len(got) != 1 {
		t.Fatalf("refused writes reached the file: %v", got)
	}
}

// TestMembersOfOtherProgramsKept: members of conversations.json that are
// no conversation mombot wrote (the system sender's, one that is not an
// object) are served as written and written back unchanged.
func TestMembersOfOtherProgramsKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	doc := "{\n  \"system\": {\"last_active\": \"2026-02-24T10:35:00\", \"turns\": []},\n  \"_meta\": [1,  2, 3],\n  \"+9\": null\n}\n"
	os.WriteFile(path, []byte(doc), 0o600)
	s, mem := open(t, path, time.Now(), nil)
	if err := mem.SaveTurn(ctx, "+2", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"system": `{"last_active": "2026-02-24T10:35:00", "turns": []}`, "_meta": `[1,  2, 3]`, "+9": `null`} {
		if got := string(members(t, path)[key]); got != want {
			t.Errorf("%s written back as %s, want %s", key, got, want)
		}
		if r, err := s.Get(ctx, conversation.Conversations, key); err != nil || string(r.Data) != want {
			t.Errorf("Get(%s) = %s, %v; want %s", key, r.Data, err, want)
		}
	}
}

func TestCorruptFileIsMovedAside(t *testing.T) {
	for _, kind := range []conversation.Kind{conversation.Conversations, conversation.UsageDays} {
		for name, junk := range map[string]string{
			"truncated": `{"+1": {"last_active": "2026-02-24T10:35:00", "turns": [`,
			"empty":     "",
			"blank":     " \n",
			"an array":  `[]`,
			"null":      `null`,
		} {
			t.Run(string(kind)+"/"+name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "conversations.json")
				file := path
				if kind != conversation.Conversations {
					file = filepath.Join(dir, "conversations."+string(kind)+".json")
				}
				os.WriteFile(file, []byte(junk), 0o600)
				log, buf := logBuffer()
				s, err := jsonfile.Open(path, &jsonfile.Options{Logger: log})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if _, err := s.List(ctx, kind, ""); err != nil {
					t.Fatalf("List after the file was moved aside: %v", err)
				}
				if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "moved_to=") {
					t.Fatalf("no loud log line for a corrupt file:\n%s", buf)
				}
				aside, _ := filepath.Glob(file + ".corrupt-*")
				if len(aside) != 1 {
					t.Fatalf("corrupt file not moved aside: %v", aside)
				}
				if got, _ := os.ReadFile(aside[0]); string(got) != junk {
					t.Fatal("the moved-aside file is not the original")
				}
				if _, err := s.Put(ctx, kind, conversation.Record{Key: "2026-02-24/+2", Data: []byte(`{}`)}, 0); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(aside[0]); string(got) != junk {
					t.Fatal("a write overwrote the moved-aside file")
				}
				if got := members(t, file); len(got) != 1 {
					t.Fatalf("the file anew holds %v, want the one record written", got)
				}
			})
		}
	}
}

// TestCorruptFileMovedAsideOnlyUnderLock: a reader finds the file corrupt,
// and before it moves it aside another process (holding the lock file)
// moves the corrupt file aside itself and renames a valid new file into
// place. The valid file must not be moved aside.
func TestCorruptFileMovedAsideOnlyUnderLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	_, mem := open(t, path, time.Now(), nil)
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("one", "1")); err != nil {
		t.Fatal(err)
	}
	junk := []byte(`{"+1": {"turns": [`)
	os.WriteFile(path+".junk", junk, 0o600)
	if err := os.Rename(path+".junk", path); err != nil {
		t.Fatal(err)
	}
	ran := false
	defer jsonfile.SetParseFailedHook(func() {
		if ran {
			return
		}
		ran = true
		// The other process: its Open moves the junk aside under the
		// lock, and its save renames a valid file into place.
		other, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
		if err != nil {
			t.Error(err)
			return
		}
		defer other.Close()
		om, _ := conversation.New(other, nil)
		if err := om.SaveTurn(ctx, "+2", storetest.TextTurn("two", "2")); err != nil {
			t.Error(err)
		}
	})()

	if h, err := mem.History(ctx, "+2"); err != nil || len(h) != 2 {
		t.Fatalf("History(+2) = %d messages, %v; want the other process's turn", len(h), err)
	}
	if !ran {
		t.Fatal("the reader never found the corrupt file")
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved aside %d files, want only the corrupt one: %v", len(aside), aside)
	}
	if got, _ := os.ReadFile(aside[0]); !bytes.Equal(got, junk) {
		t.Fatalf("the file moved aside is not the corrupt one:\n%s", got)
	}
}

// TestReadOnly checks the rules of Options.ReadOnly: nothing is created
// (no lock file), changed, moved or removed; a damaged or empty file is
// reported with ErrCorrupt; writes are refused with ErrReadOnly.
func TestReadOnly(t *testing.T) {
	ro := &jsonfile.Options{Logger: quiet, ReadOnly: true}
	t.Run("a valid file is read and nothing is made", func(t *testing.T) {
		path := copyFixture(t, "python_written.json")
		dir := filepath.Dir(path)
		os.WriteFile(filepath.Join(dir, ".conversations.json.tmp-5"), []byte("{"), 0o600)
		os.WriteFile(filepath.Join(dir, "conversations.usage.json"), []byte("{"), 0o600)
		before := storetest.Files(t, dir)
		s, err := jsonfile.Open(path, ro)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		mem, _ := conversation.New(s, nil)
		if l, err := mem.List(ctx); err != nil || len(l) != 2 {
			t.Errorf("List = %v, %v; want the fixture's conversations", l, err)
		}
		if c, err := mem.Load(ctx, "+14155551234"); err != nil || len(c.Turns) != 2 {
			t.Errorf("Load = %d turns, %v; want 2", len(c.Turns), err)
		}
		if err := s.Delete(ctx, conversation.Conversations, "+14155551234", 0); !errors.Is(err, conversation.ErrReadOnly) {
			t.Errorf("Delete = %v, want ErrReadOnly", err)
		}
		if _, err := s.Put(ctx, "kind-a", conversation.Record{Key: "k", Data: []byte(`1`)}, 0); !errors.Is(err, conversation.ErrReadOnly) {
			t.Errorf("Put = %v, want ErrReadOnly", err)
		}
		if _, err := mem.UsageSince(ctx, time.Time{}); !errors.Is(err, jsonfile.ErrCorrupt) || !strings.Contains(err.Error(), "does not parse") {
			t.Errorf("UsageSince on a damaged usage file = %v, want ErrCorrupt", err)
		}
		storetest.SameFiles(t, dir, before, "a read-only store")
	})
	for name, content := range map[string]string{"truncated": `{"+1": {"last_active": "2026-`, "empty": ""} {
		t.Run("a "+name+" file is reported and left where it is", func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "conversations.json")
			os.WriteFile(path, []byte(content), 0o600)
			before := storetest.Files(t, dir)
			_, err := jsonfile.Open(path, ro)
			if !errors.Is(err, jsonfile.ErrCorrupt) || !strings.Contains(err.Error(), path+": file does not parse") {
				t.Errorf("Open = %v, want ErrCorrupt naming the file", err)
			}
			storetest.SameFiles(t, dir, before, "opening a damaged file read-only")
		})
	}
	t.Run("a missing file is not created", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "sub", "conversations.json")
		_, err := jsonfile.Open(path, ro)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "no conversations file at "+path) {
			t.Errorf("Open = %v, want fs.ErrNotExist naming the file", err)
		}
		if got := storetest.Files(t, dir); len(got) != 0 {
			t.Errorf("the folder changed: %v", got)
		}
	})
}

func TestMustExist(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo", "conversations.json")
	_, err := jsonfile.Open(missing, &jsonfile.Options{Logger: quiet, MustExist: true})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "no conversations file at "+missing) {
		t.Fatalf("Open of a missing file with MustExist: %v; want fs.ErrNotExist naming the path", err)
	}
	if _, err := jsonfile.Open(filepath.Join(dir, "c.json"), &jsonfile.Options{Logger: quiet, MustExist: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing file with MustExist: %v", err)
	}
	if got := storetest.Files(t, dir); len(got) != 0 {
		t.Fatalf("Open with MustExist created %v", got)
	}
	if _, err := jsonfile.Open(dir, &jsonfile.Options{Logger: quiet, MustExist: true}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Open of a folder with MustExist: %v", err)
	}

	path := filepath.Join(dir, "c.json")
	_, mem := open(t, path, time.Now(), nil)
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	_, mem = open(t, path, time.Now(), &jsonfile.Options{Logger: quiet, MustExist: true})
	if l, err := mem.List(ctx); err != nil || len(l) != 1 {
		t.Fatalf("List of an existing file opened with MustExist = %v, %v", l, err)
	}
}

// TestFileModeAndTemps: files are written with mode 0600, leave no
// temporary file, and the temporary files of writes killed mid-write, of
// every kind's file, are removed at the next start, and nothing else.
func TestFileModeAndTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	os.WriteFile(path, []byte("{}"), 0o644) // as the original left it
	stale := []string{".conversations.json.tmp-1", ".conversations.usage.json.tmp-22", ".conversations.kind-a.json.tmp-3"}
	kept := []string{"conversations.json.tmp-1", ".other.json.tmp-1", ".conversations.json.tmpx", ".whatsapp-inbox.json.tmp-1", "whatsapp-inbox.json"}
	for _, n := range slices.Concat(stale, kept) {
		os.WriteFile(filepath.Join(dir, n), []byte("{"), 0o600)
	}
	s, mem := open(t, path, time.Now(), nil)
	for _, n := range stale {
		if _, err := os.Stat(filepath.Join(dir, n)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the stale temporary file %s is still there", n)
		}
	}
	for _, n := range kept {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s, not a temporary file of the store, was removed", n)
		}
	}
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "kind-a", conversation.Record{Key: "k", Data: []byte(`1`)}, 0); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"conversations.json", "conversations.kind-a.json", "conversations.json.lock"} {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", n, fi.Mode().Perm())
		}
	}
	if got, want := len(storetest.Files(t, dir)), len(kept)+3; got != want {
		t.Errorf("the folder holds %d files, want %d: %v", got, want, storetest.Files(t, dir))
	}
}

// TestFailedWriteChangesNothing: a write that cannot be made returns the
// file system's error, and the store does not claim it.
func TestFailedWriteChangesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "conversations.json")
	s, mem := open(t, path, time.Now(), nil)
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("first", "one")); err != nil {
		t.Fatal(err)
	}
	saved, _ := os.ReadFile(path)
	// The volume goes away: the next save cannot write.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("second", "two"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a save that could not be written: err = %v, want the file system's error wrapped", err)
	}
	// The volume comes back: the failed turn is nowhere.
	os.MkdirAll(dir, 0o700)
	os.WriteFile(path, saved, 0o600)
	if h, err := mem.History(ctx, "+1"); err != nil || len(h) != 2 || h[0].Text() != "first" {
		t.Fatalf("after a failed save History = %v, %v; want the first turn only", h, err)
	}
	s.Close()
	if _, err := s.List(ctx, conversation.Conversations, ""); !errors.Is(err, jsonfile.ErrClosed) {
		t.Fatalf("List after Close: %v, want ErrClosed", err)
	}
}

func TestReadOnlyFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only folders; TestFailedWriteChangesNothing covers write errors")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	_, mem := open(t, path, time.Now(), nil)
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("a", "b")); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("save into a read-only folder: err = %v, want permission denied", err)
	}
	if h, _ := mem.History(ctx, "+1"); len(h) != 0 {
		t.Fatal("a failed save changed the memory")
	}
}

// TestTwoStoresOnOneFile shows what a CLI command and the server see of each
// other's changes: each store has its own lock descriptor, as two processes do.
func TestTwoStoresOnOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	now := time.Now()
	_, server := open(t, path, now, nil)
	_, cli := open(t, path, now, nil)
	if err := server.SaveTurn(ctx, "+1", storetest.TextTurn("hi", "hello")); err != nil {
		t.Fatal(err)
	}
	if h, _ := cli.History(ctx, "+1"); len(h) != 2 {
		t.Fatalf("the second store sees %d messages, want 2", len(h))
	}
	if err := cli.Clear(ctx, "+1"); err != nil {
		t.Fatal(err)
	}
	if h, _ := server.History(ctx, "+1"); len(h) != 0 {
		t.Fatal("the server still serves a conversation the CLI cleared")
	}
	if err := server.SaveTurn(ctx, "+2", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := cli.SaveTurn(ctx, "+3", storetest.TextTurn("c", "d")); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*conversation.Memory{server, cli} {
		if l, _ := m.List(ctx); len(l) != 2 {
			t.Fatalf("a store lists %d conversations, want 2: an update was lost", len(l))
		}
	}
}

// TestEveryChangeSeen: a store sees every change other stores make, also
// when two of them replaced the file, with the same size, within one tick of
// the file system's clock (file systems give the inode number of a file
// just replaced to the next), and a change another program makes in place;
// and a file removed is an empty store: the file on disk is the truth.
func TestEveryChangeSeen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	var stores []*jsonfile.Store
	for range 3 {
		s, _ := open(t, path, time.Now(), nil)
		stores = append(stores, s)
	}
	var version int64
	for i := range 300 {
		r := stores[i%3]
		if _, err := r.Get(ctx, "kind-a", "k"); err != nil && !errors.Is(err, conversation.ErrNotFound) {
			t.Fatal(err)
		}
		var data string
		for j := range 2 {
			w := stores[(i+1+j)%3]
			data = fmt.Sprintf(`"%04d-%d"`, i, j)
			v, err := w.Put(ctx, "kind-a", conversation.Record{Key: "k", Data: []byte(data), Version: version}, 0)
			if err != nil {
				t.Fatalf("write %d.%d: %v", i, j, err)
			}
			version = v
		}
		got, err := r.Get(ctx, "kind-a", "k")
		if err != nil || string(got.Data) != data || got.Version != version {
			t.Fatalf("after writes %d: a third store reads %s v%d (%v), want %s v%d", i, got.Data, got.Version, err, data, version)
		}
	}

	file := filepath.Join(filepath.Dir(path), "conversations.kind-a.json")
	if err := os.WriteFile(file, []byte(`{"k": "in place, like Python's json.dump"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := stores[0].Get(ctx, "kind-a", "k"); err != nil || string(got.Data) != `"in place, like Python's json.dump"` {
		t.Fatalf("after a write in place: %s, %v", got.Data, err)
	}
	os.Remove(file)
	if got, err := stores[1].Get(ctx, "kind-a", "k"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("after the file was removed: %s, %v; want ErrNotFound", got.Data, err)
	}
}

func TestSizeWarning(t *testing.T) {
	log, buf := logBuffer()
	_, mem := open(t, filepath.Join(t.TempDir(), "c.json"), time.Now(), &jsonfile.Options{Logger: log, WarnSize: 700})
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "large") {
		t.Fatal("warned below the size")
	}
	for i := range 5 {
		if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn(fmt.Sprint("more text ", i), "b")); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(buf.String(), "the file is large"); n != 1 {
		t.Fatalf("warned %d times, want once:\n%s", n, buf)
	}
}

func TestDefaultPath(t *testing.T) {
	dir := t.TempDir()
	docker := filepath.Join(dir, "app", "data")
	if got, want := jsonfile.DefaultPathIn(docker), filepath.Join("data", "conversations.json"); got != want {
		t.Errorf("without the container's folder: %q, want %q", got, want)
	}
	os.MkdirAll(filepath.Dir(docker), 0o700)
	os.WriteFile(docker, nil, 0o600)
	if got, want := jsonfile.DefaultPathIn(docker), filepath.Join("data", "conversations.json"); got != want {
		t.Errorf("with a file where the container's folder would be: %q, want %q", got, want)
	}
	os.Remove(docker)
	os.Mkdir(docker, 0o700)
	if got, want := jsonfile.DefaultPathIn(docker), filepath.Join(docker, "conversations.json"); got != want {
		t.Errorf("with the container's folder: %q, want %q", got, want)
	}
	if jsonfile.DockerDataDir != "/app/data" {
		t.Errorf("DockerDataDir = %q, want the original image's /app/data", jsonfile.DockerDataDir)
	}
}

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "mombot")
	defer os.RemoveAll(dir)
	store, err := jsonfile.Open(filepath.Join(dir, "conversations.json"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	mem, _ := conversation.New(store, nil)
	ctx := context.Background()
	mem.SaveTurn(ctx, "+14155551234", []conversation.Message{
		conversation.UserText("[From Erin]: what's for dinner?"),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Tacos!")),
	})
	history, _ := mem.History(ctx, "+14155551234")
	for _, m := range history {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// user: [From Erin]: what's for dinner?
	// assistant: Tacos!
}
