package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "mombot.db")
		return func() (conversation.Store, error) { return sqlite.Open(path, nil) }
	})
}

// open opens a store on a new database and closes it when the test ends.
func open(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mombot.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// TestFileModes: the database and its -wal and -shm are private.
func TestFileModes(t *testing.T) {
	s, path := open(t)
	if _, err := s.Put(context.Background(), kind, conversation.Record{Key: "k", Data: []byte(`1`)}, 0); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(name), got)
		}
	}
}

// TestSecureDelete: the bytes of a deleted record, and of a value that was
// replaced, small or spread over pages of its own, are not left in the
// database file.
func TestSecureDelete(t *testing.T) {
	s, path := open(t)
	ctx := context.Background()
	secret := func(name string, size int) []byte {
		return []byte(`"` + name + strings.Repeat(".", size) + `"`)
	}
	put := func(key string, data []byte, version int64) int64 {
		t.Helper()
		v, err := s.Put(ctx, kind, conversation.Record{Key: key, Data: data, Version: version}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	put("kept", []byte(`"kept"`), 0)
	put("deleted small", secret("SECRET-DELETED-SMALL", 10), 0)
	put("deleted large", secret("SECRET-DELETED-LARGE", 20_000), 0)
	v1 := put("replaced small", secret("SECRET-REPLACED-SMALL", 10), 0)
	v2 := put("replaced large", secret("SECRET-REPLACED-LARGE", 20_000), 0)
	for _, key := range []string{"deleted small", "deleted large"} {
		if err := s.Delete(ctx, kind, key, 0); err != nil {
			t.Fatal(err)
		}
	}
	put("replaced small", []byte(`"new"`), v1)
	put("replaced large", []byte(`"new"`), v2)
	// Closing folds the -wal into the database file and removes it.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"kept"`)) {
		t.Fatal("the database file does not hold the kept record: the test looks in the wrong place")
	}
	for _, name := range []string{"SECRET-DELETED-SMALL", "SECRET-DELETED-LARGE", "SECRET-REPLACED-SMALL", "SECRET-REPLACED-LARGE"} {
		if bytes.Contains(data, []byte(name)) {
			t.Errorf("%s is still in the database file", name)
		}
	}
}

// TestScrubEmptiesTheLog: after Scrub, the write-ahead log holds no page
// of a deleted record.
func TestScrubEmptiesTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mombot.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	secret := strings.Repeat("Emma is allergic to peanuts. ", 200)
	v, err := s.Put(ctx, conversation.Recent, conversation.Record{Key: "+14155551234", Data: []byte(strconv.Quote(secret))}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, conversation.Recent, "+14155551234", v); err != nil {
		t.Fatal(err)
	}
	if err := s.Scrub(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal"} {
		data, err := os.ReadFile(name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("allergic to peanuts")) {
			t.Errorf("%s still holds the deleted text after Scrub", filepath.Base(name))
		}
	}
}
