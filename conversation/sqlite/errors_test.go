package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
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
	for i := 0; i < 100; i++ {
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

func TestPlainErrors(t *testing.T) {
	defer func(f func(string) (uint64, error)) { freeBytes = f }(freeBytes)
	free := uint64(1 << 30)
	freeBytes = func(string) (uint64, error) { return free, nil }
	path := "/srv/data/mombot.db"

	tests := []struct {
		name  string
		err   error
		free  uint64
		want  error // nil: returned as it is
		words string
	}{
		{"SQLITE_FULL is a full disk", driverError(t, "max_page_count(3)"), 1 << 30, ErrDiskFull, "no space left"},
		{"SQLITE_READONLY is a read-only database", driverError(t, "query_only(1)"), 1 << 30, ErrReadOnly, "cannot be written"},
		{"SQLITE_IOERR_SHMSIZE (4874) on a full file system is a full disk", codeError(4874), 0, ErrDiskFull, "no space left"},
		{"SQLITE_IOERR_WRITE (778) on a full file system is a full disk", codeError(778), 4096, ErrDiskFull, "no space left"},
		{"an I/O error with space left is left as it is", codeError(4874), 1 << 30, nil, ""},
		{"other errors are left as they are", errors.New("boom"), 0, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			free = tt.free
			got := plain(path, tt.err)
			if tt.want == nil {
				if got != tt.err {
					t.Errorf("plain = %v, want the error unchanged", got)
				}
				return
			}
			if !errors.Is(got, tt.want) || !errors.Is(got, tt.err) {
				t.Errorf("plain = %v; want it to wrap %v and the driver's error", got, tt.want)
			}
			if !strings.Contains(got.Error(), tt.words) || !strings.Contains(got.Error(), path) {
				t.Errorf("plain = %q; want it to say %q about %s", got, tt.words, path)
			}
		})
	}
}
