package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestPragmas: every connection of a writer waits for other processes'
// locks, commits durably and overwrites what it deletes, on a WAL
// database; a reader's refuses to write and syncs a checkpoint.
func TestPragmas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mombot.db")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tt := range []struct {
		store  *Store
		pragma string
		want   string
	}{
		{w, "journal_mode", "wal"},
		{w, "busy_timeout", "5000"},
		{w, "synchronous", "2"}, // FULL
		{w, "secure_delete", "1"},
		{w, "query_only", "0"},
		{r, "busy_timeout", "5000"},
		{r, "synchronous", "2"},
		{r, "query_only", "1"},
	} {
		// Hold every connection of the pool, so that each is checked.
		var conns []*sql.Conn
		for range maxConns {
			c, err := tt.store.db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns = append(conns, c)
		}
		for i, c := range conns {
			var got string
			if err := c.QueryRowContext(context.Background(), "PRAGMA "+tt.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("read-only %v, connection %d: PRAGMA %s = %s, want %s", tt.store.readOnly, i, tt.pragma, got, tt.want)
			}
		}
		for _, c := range conns {
			c.Close()
		}
	}
}

// TestFailedMigrationChangesNothing: the steps of a migration run in one
// transaction, so a step that fails leaves the database at the version it
// had.
func TestFailedMigrationChangesNothing(t *testing.T) {
	defer func(ms []string) { migrations = ms }(migrations)
	path := filepath.Join(t.TempDir(), "mombot.db")
	migrations = append(migrations[:len(migrations):len(migrations)], "CREATE TABLE later (x); CREATE TABLE records (x)")
	if s, err := Open(path, nil); err == nil {
		s.Close()
		t.Fatal("Open with a failing migration succeeded")
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v, n int
	if err := db.QueryRow(`SELECT user_version, (SELECT count(*) FROM sqlite_schema) FROM pragma_user_version`).Scan(&v, &n); err != nil {
		t.Fatal(err)
	}
	if v != 0 || n != 0 {
		t.Fatalf("after a failed migration of a new file: schema version %d, %d objects; want 0 and none", v, n)
	}
}
