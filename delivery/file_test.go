package delivery_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestVolatileConformance(t *testing.T) {
	deliverytest.Run(t, func(t *testing.T) delivery.Inbox { return &delivery.Volatile{} })
}

func TestFileConformance(t *testing.T) {
	deliverytest.Run(t, func(t *testing.T) delivery.Inbox {
		return openFile(t, filepath.Join(t.TempDir(), "inbox.json"), nil)
	})
}

func TestFileDurable(t *testing.T) {
	deliverytest.RunDurable(t, func(t *testing.T) (delivery.Inbox, func() delivery.Inbox) {
		path := filepath.Join(t.TempDir(), "inbox.json")
		return openFile(t, path, nil), func() delivery.Inbox { return openFile(t, path, nil) }
	})
}

func openFile(t *testing.T, path string, now func() time.Time) *delivery.File {
	t.Helper()
	f, err := delivery.OpenFile(path, &delivery.FileOptions{Now: now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestFile: a File is on disk after every Push and Done, mode 0600, with
// no temporary file left; what is read back equals what was pushed.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inbox.json")
	f := openFile(t, path, nil)
	deliverytest.Push(t, f, deliverytest.Msg("+1", "a1"))
	deliverytest.Push(t, f, deliverytest.Msg("+1", "a2"))
	deliverytest.Push(t, f, delivery.Message{ID: "b1", Key: "+2", Body: []byte(`{"text":"a <b> & c"}`)})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode %v, want 0600", perm)
	}
	deliverytest.Done(t, f, "+1", "a1")

	g := openFile(t, path, nil)
	if got := deliverytest.Keys(t, g); !slices.Equal(got, []string{"+1", "+2"}) {
		t.Fatalf("Keys after reopening = %q", got)
	}
	if m, _ := deliverytest.Peek(t, g, "+1"); m.ID != "a2" {
		t.Errorf("head of +1 after reopening = %q, want a2", m.ID)
	}
	if m, _ := deliverytest.Peek(t, g, "+2"); string(m.Body) != `{"text":"a <b> & c"}` {
		t.Errorf("body read back = %s", m.Body)
	}
	if !deliverytest.Dup(t, g, deliverytest.Msg("+1", "a1")) {
		t.Errorf("a message done before reopening is not a duplicate after it")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 { // the file and its lock file
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// TestFileHandledExpires: a handled id is remembered HandledFor, across
// reopening, and then dropped from the file.
func TestFileHandledExpires(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.json")
	t0 := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	f := openFile(t, path, clock)
	deliverytest.Done(t, f, "+1", "wamid.A")
	set(t0.Add(time.Minute))
	deliverytest.Done(t, f, "+1", "wamid.B")

	set(t0.Add(time.Hour))
	if !deliverytest.Dup(t, openFile(t, path, clock), deliverytest.Msg("+1", "wamid.A")) {
		t.Fatalf("an id handled an hour ago, after reopening: kept, want a duplicate")
	}
	set(t0.Add(delivery.HandledFor + 30*time.Second))
	g := openFile(t, path, clock)
	deliverytest.Push(t, g, deliverytest.Msg("+1", "wamid.A")) // more than 7 days: a new message
	if !deliverytest.Dup(t, g, deliverytest.Msg("+1", "wamid.B")) {
		t.Errorf("an id handled less than 7 days ago: kept, want a duplicate")
	}
	set(t0.Add(delivery.HandledFor + time.Hour))
	deliverytest.Push(t, f, deliverytest.Msg("+3", "wamid.B")) // without reopening
	f.Erase(context.Background(), "+3")                        // a rewrite, which drops expired ids
	for _, l := range lines(t, path) {
		if strings.Contains(l, `"op":"done"`) {
			t.Errorf("expired id still in the file: %s", l)
		}
	}
}

// TestFileDamaged: a file that does not parse is moved aside, logged, and
// replaced by an empty inbox.
func TestFileDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.json")
	if err := os.WriteFile(path, []byte(`{"queues": {"+1": [{"ID": "wamid.A"`), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	f, err := delivery.OpenFile(path, &delivery.FileOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if got := deliverytest.Keys(t, f); len(got) != 0 {
		t.Errorf("Keys of a damaged file: %q", got)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("damaged file not moved aside: %v", aside)
	}
	if data, _ := os.ReadFile(aside[0]); !strings.Contains(string(data), "wamid.A") {
		t.Errorf("the file moved aside lost its content: %q", data)
	}
	if !strings.Contains(logs.String(), "inbox file is damaged") {
		t.Errorf("the damaged file was not logged: %s", logs.String())
	}
	deliverytest.Push(t, f, deliverytest.Msg("+1", "x"))
	if got := deliverytest.Keys(t, openFile(t, path, nil)); !slices.Equal(got, []string{"+1"}) {
		t.Errorf("a new file did not replace the damaged one: %q", got)
	}
}

// TestFileWriteFails: a message is kept, or done with, only once that is on
// disk; a failed Done leaves the message queued and unrecorded.
func TestFileWriteFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "inbox.json")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := openFile(t, path, nil)
	// The folder moved away makes every save fail; moved back, the file
	// is as it was.
	away := func() {
		if err := os.Rename(dir, dir+".away"); err != nil {
			t.Fatal(err)
		}
	}
	back := func() {
		if err := os.Rename(dir+".away", dir); err != nil {
			t.Fatal(err)
		}
	}
	away()
	if _, err := f.Push(context.Background(), deliverytest.Msg("+1", "a1")); err == nil {
		t.Fatal("Push succeeded without being able to save")
	}
	back()
	if got := deliverytest.Keys(t, f); len(got) != 0 {
		t.Fatalf("a message whose save failed is queued: %q", got)
	}
	deliverytest.Push(t, f, deliverytest.Msg("+1", "a1"))
	away()
	if err := f.Done(context.Background(), "+1", "a1"); err == nil {
		t.Fatal("Done succeeded without being able to save")
	}
	back()
	if m, _ := deliverytest.Peek(t, f, "+1"); m.ID != "a1" {
		t.Fatalf("a message whose Done could not be saved is gone: head %q", m.ID)
	}
	// Neither removed nor recorded: Done again does both.
	deliverytest.Done(t, f, "+1", "a1")
	if got := deliverytest.Keys(t, openFile(t, path, nil)); len(got) != 0 {
		t.Errorf("Keys after Done = %q", got)
	}
}

// TestFileShared: two Files on one path, as mombot serve and mombot erase
// in two processes, each see what the other wrote, and an erase by one
// neither loses a message the other pushed nor comes back with the
// other's next write.
func TestFileShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.json")
	serve, erase := openFile(t, path, nil), openFile(t, path, nil)
	deliverytest.Done(t, serve, "+1", "a0")
	deliverytest.Push(t, serve, deliverytest.Msg("+1", "a1"))
	deliverytest.Push(t, serve, deliverytest.Msg("+2", "b1"))
	if queued, handled := deliverytest.Erase(t, erase, "+1"); queued != 1 || handled != 1 {
		t.Errorf("Erase(+1) in the other process = %d queued, %d handled, want 1 and 1", queued, handled)
	}
	deliverytest.Push(t, serve, deliverytest.Msg("+2", "b2"))
	if got := deliverytest.Keys(t, serve); !slices.Equal(got, []string{"+2"}) {
		t.Errorf("Keys after the other process's Erase(+1) = %q, want [+2]", got)
	}
	g := openFile(t, path, nil)
	if got := deliverytest.Keys(t, g); !slices.Equal(got, []string{"+2"}) {
		t.Errorf("Keys on disk = %q, want [+2]", got)
	}
	for _, id := range []string{"b1", "b2"} {
		if m, _ := deliverytest.Peek(t, g, "+2"); m.ID != id {
			t.Fatalf("head of +2 = %q, want %s", m.ID, id)
		}
		deliverytest.Done(t, erase, "+2", id)
	}
	if !deliverytest.Dup(t, serve, deliverytest.Msg("+2", "b1")) {
		t.Errorf("Push of b1, done by the other process: kept, want a duplicate")
	}
}

// TestFileReleasedData: the inbox file mombot v0.1.0 wrote (made by its
// own code: two messages of one sender waiting, one of another, one id
// handled) is read as it was: the messages are answered in order and the
// id handled stays a duplicate; the first write keeps them all.
func TestFileReleasedData(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "v0.1.0", "whatsapp-inbox.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "whatsapp-inbox.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A day after v0.1.0 wrote it: its handled id is less than a week old.
	now := func() time.Time { return time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC) }
	f := openFile(t, path, now)
	if got := deliverytest.Keys(t, f); !slices.Equal(got, []string{"+14155550101", "+14155550102"}) {
		t.Fatalf("Keys = %q", got)
	}
	m, _ := deliverytest.Peek(t, f, "+14155550101")
	if m.ID != "wamid.A1" || string(m.Body) != `{"id":"wamid.A1","from":"+14155550101","type":"text","text":"first <one> & more","timestamp":1795780800}` {
		t.Errorf("head of +14155550101 = %s %s", m.ID, m.Body)
	}
	if !deliverytest.Dup(t, f, deliverytest.Msg("+14155550101", "wamid.A0")) {
		t.Error("the id v0.1.0 recorded as handled: kept, want a duplicate")
	}
	deliverytest.Push(t, f, deliverytest.Msg("+14155550102", "wamid.B2"))
	deliverytest.Done(t, f, "+14155550101", "wamid.A1")
	g := openFile(t, path, now)
	for key, want := range map[string][]string{"+14155550101": {"wamid.A2"}, "+14155550102": {"wamid.B1", "wamid.B2"}} {
		for _, id := range want {
			if m, _ := deliverytest.Peek(t, g, key); m.ID != id {
				t.Fatalf("head of %s after a write = %q, want %s", key, m.ID, id)
			}
			deliverytest.Done(t, g, key, id)
		}
	}
	if !deliverytest.Dup(t, g, deliverytest.Msg("+14155550101", "wamid.A0")) {
		t.Error("the id v0.1.0 recorded as handled, after a write: kept, want a duplicate")
	}
}

// TestFileRemovesTemps checks that OpenFile removes the temporary files
// that a save killed mid-write left beside the inbox, and keeps the
// inbox's messages.
func TestFileRemovesTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inbox.json")
	f := openFile(t, path, nil)
	deliverytest.Push(t, f, deliverytest.Msg("+1", "x"))
	leftover := filepath.Join(dir, ".inbox.json.tmp-99")
	if err := os.WriteFile(leftover, []byte(`{"queues":`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := openFile(t, path, nil)
	if _, err := os.Stat(leftover); err == nil {
		t.Errorf("%s is still there", leftover)
	}
	if got := deliverytest.Keys(t, g); !slices.Equal(got, []string{"+1"}) {
		t.Errorf("Keys = %q, want [+1]", got)
	}
}

// TestFileEmpty checks that a 0-byte inbox file is damaged like any other
// that does not parse: moved aside and logged, not silently taken as empty.
func TestFileEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.json")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	if _, err := delivery.OpenFile(path, &delivery.FileOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
		t.Fatal(err)
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
		t.Errorf("a 0-byte inbox was not moved aside: %v", aside)
	}
	if !strings.Contains(logs.String(), "inbox file is damaged") {
		t.Errorf("the 0-byte file was not logged: %s", logs.String())
	}
}
