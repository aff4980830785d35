package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mombot/mombot/conversation"
)

// driverError makes a real error of the driver with the given pragma on
// the connection: a database that can hold only a few pages fails an
// insert with SQLITE_FULL, and one that is query_only fails it with
// SQLITE_READONLY, as a full disk and a read-only file do.
func driverError(t *testing.T, pragma string) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	ctx := context.Background()
	setup, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.ExecContext(ctx, "CREATE TABLE t (b BLOB)"); err != nil {
		t.Fatal(err)
	}
	setup.Close()
	db, err := sql.Open("sqlite", path+"?_pragma="+pragma)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for range 100 {
		if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (zeroblob(10000))"); err != nil {
			return err
		}
	}
	t.Fatalf("no error with %s", pragma)
	return nil
}

// codeError is a driver error with a code that a test cannot provoke.
type codeError int

func (c codeError) Error() string { return "disk I/O error" }
func (c codeError) Code() int     { return int(c) }

func TestTranslate(t *testing.T) {
	defer func(f func(string) (uint64, error)) { freeBytes = f }(freeBytes)
	var free uint64
	freeBytes = func(string) (uint64, error) { return free, nil }
	s := &Store{path: "/srv/data/mombot.db"}

	tests := []struct {
		name  string
		err   error
		free  uint64
		want  error // nil: returned as it is
		words string
	}{
		{"SQLITE_FULL is a full disk", driverError(t, "max_page_count(3)"), 1 << 30, ErrDiskFull, "no space left"},
		{"SQLITE_READONLY is a database that cannot be written", driverError(t, "query_only(1)"), 1 << 30, conversation.ErrReadOnly, "cannot be written"},
		{"SQLITE_IOERR_SHMSIZE (4874) on a full file system is a full disk", codeError(4874), 0, ErrDiskFull, "no space left"},
		{"SQLITE_IOERR_WRITE (778) on a full file system is a full disk", codeError(778), 4096, ErrDiskFull, "no space left"},
		{"an I/O error with space left is left as it is", codeError(4874), 1 << 30, nil, ""},
		{"SQLITE_NOTADB is a damaged file", codeError(26), 1 << 30, ErrCorrupt, "left as it is"},
		{"SQLITE_CORRUPT_INDEX (779) is a damaged file", codeError(779), 1 << 30, ErrCorrupt, "left as it is"},
		{"other errors are left as they are", errors.New("boom"), 0, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			free = tt.free
			got := s.translate(tt.err)
			if tt.want == nil {
				if got != tt.err {
					t.Errorf("translate = %v, want the error unchanged", got)
				}
				return
			}
			if !errors.Is(got, tt.want) || !errors.Is(got, tt.err) {
				t.Errorf("translate = %v; want it to wrap %v and the driver's error", got, tt.want)
			}
			if !strings.Contains(got.Error(), tt.words) || !strings.Contains(got.Error(), s.path) {
				t.Errorf("translate = %q; want it to say %q about %s", got, tt.words, s.path)
			}
			if again := s.translate(got); again != got {
				t.Errorf("translating twice = %v, want it as it was", again)
			}
		})
	}
}
