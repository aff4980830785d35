package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

func openRO(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open read-only: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestReadOnlyMissing: a missing database is an error wrapping
// fs.ErrNotExist that names it, and nothing is created, not even a folder.
func TestReadOnlyMissing(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "typo.db"), filepath.Join(dir, "no", "such", "folder.db")} {
		s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("Open(%s, ReadOnly) = %v, want an error wrapping fs.ErrNotExist that names it", path, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("Open(%s, ReadOnly) created %s", path, entries[0].Name())
		}
	}
}

// TestReadOnlyLeavesNoTrace: a read-only store reads a database no process
// has open, refuses to write with conversation.ErrReadOnly, and once
// closed has left every file as it was: the -wal and -shm SQLite keeps
// while it is open are gone, and the database is not written.
func TestReadOnlyLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	path := seed(t)
	dir := filepath.Dir(path)
	data, _ := os.ReadFile(path)
	before := storetest.Files(t, dir)
	s := openRO(t, path)

	r, err := s.Get(ctx, kind, "k")
	if err != nil || string(r.Data) != `"seeded"` || r.Version == 0 {
		t.Errorf("Get = %+v, %v; want the seeded record", r, err)
	}
	if recs, err := s.List(ctx, kind, ""); err != nil || len(recs) != 1 || recs[0].Version != r.Version {
		t.Errorf("List = %+v, %v; want the seeded record", recs, err)
	}
	if _, err := s.Get(ctx, kind, "other"); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("Get of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := s.Put(ctx, kind, conversation.Record{Key: "k", Data: []byte(`1`), Version: r.Version}, 0); !errors.Is(err, conversation.ErrReadOnly) {
		t.Errorf("Put: %v, want ErrReadOnly", err)
	}
	if err := s.Delete(ctx, kind, "k", 0); !errors.Is(err, conversation.ErrReadOnly) {
		t.Errorf("Delete: %v, want ErrReadOnly", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	storetest.SameFiles(t, dir, before, "a read-only store")
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Error("a read-only store changed the database's content")
	}
}

// TestReadOnlyEmpty: a database that no writer has set up (an empty file)
// is an empty store, and stays empty.
func TestReadOnlyEmpty(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mombot.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := storetest.Files(t, dir)
	s := openRO(t, path)
	if recs, err := s.List(context.Background(), conversation.Conversations, ""); err != nil || len(recs) != 0 {
		t.Errorf("List = %v, %v; want nothing", recs, err)
	}
	if _, err := s.Get(context.Background(), conversation.Conversations, "+14155551234"); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("Get: %v, want ErrNotFound", err)
	}
	s.Close()
	storetest.SameFiles(t, dir, before, "a read-only store on an empty file")
}

// TestReadOnlyWhileWriting: a read-only store sees every write committed
// before each read, also when it was opened before them, and goes on
// reading after the writer closed; the last to close removes the -wal and
// -shm.
func TestReadOnlyWhileWriting(t *testing.T) {
	ctx := context.Background()
	path := seed(t)
	w, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := openRO(t, path)
	var v int64
	for i := range 3 {
		if v, err = w.Put(ctx, kind, conversation.Record{Key: "n", Data: []byte{'0' + byte(i)}, Version: v}, 0); err != nil {
			t.Fatal(err)
		}
		if got, err := r.Get(ctx, kind, "n"); err != nil || got.Version != v || got.Data[0] != '0'+byte(i) {
			t.Fatalf("after write %d the reader has %q v%d, %v; want %d v%d", i, got.Data, got.Version, err, i, v)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if recs, err := r.List(ctx, kind, ""); err != nil || len(recs) != 2 {
		t.Fatalf("after the writer closed, List = %v, %v; want 2 records", recs, err)
	}
	r.Close()
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("after both closed: %v, want the database alone", entries)
	}
}
