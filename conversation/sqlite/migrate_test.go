package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

func rawOpen(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func schemaVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func hasIndex(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestMigrationsNumbered(t *testing.T) {
	if len(migrations) < 2 {
		t.Fatalf("%d migrations embedded, want at least 2", len(migrations))
	}
	for i, m := range migrations {
		if m.version != i+1 || m.sql == "" {
			t.Errorf("migration %d is %s, version %d", i, m.name, m.version)
		}
	}
}

func TestOpenTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mombot.db")
	ctx := context.Background()
	now := time.Now()
	for i := range 3 {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		turn := conversation.Turn{Messages: []conversation.Message{conversation.UserText("hi")}}
		if err := s.Append(ctx, "+1", turn, now, conversation.Limits{Timeout: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db := rawOpen(t, path)
	if got := schemaVersion(t, db); got != len(migrations) {
		t.Fatalf("schema version %d after three opens, want %d", got, len(migrations))
	}
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM schema_version`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("schema_version has %d rows (err %v), want 1", rows, err)
	}
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, err := s.Load(ctx, "+1"); err != nil || len(c.Turns) != 3 {
		t.Fatalf("after reopening: %d turns (err %v), want 3", len(c.Turns), err)
	}
}

func TestUpgradeFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mombot.db")
	ctx := context.Background()
	old := rawOpen(t, path)
	if err := migrate(ctx, old, migrations[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`
		INSERT INTO conversations (phone, last_active) VALUES ('+1', 1771929300123456000);
		INSERT INTO turns (phone, seq, json) VALUES ('+1', 1, '{"messages":[{"role":"user","content":"from version 1"}]}');`); err != nil {
		t.Fatal(err)
	}
	if hasIndex(t, old, "conversations_last_active") {
		t.Fatal("version 1 already has the sweep index")
	}
	old.Close()

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := rawOpen(t, path)
	if got := schemaVersion(t, db); got != len(migrations) {
		t.Fatalf("schema version %d after upgrade, want %d", got, len(migrations))
	}
	if !hasIndex(t, db, "conversations_last_active") {
		t.Fatal("the upgrade did not add the sweep index")
	}
	c, err := s.Load(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Turns) != 1 || c.Turns[0].Messages[0].Text() != "from version 1" || c.LastActive.UnixNano() != 1771929300123456000 {
		t.Fatalf("after upgrade: %+v", c)
	}
}

func TestSchemaTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mombot.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := rawOpen(t, path).Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(path, nil); !errors.Is(err, ErrSchemaTooNew) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open of a newer schema: err = %v, want ErrSchemaTooNew", err)
	}
}

func TestFailedMigrationChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mombot.db")
	db := rawOpen(t, path)
	bad := append(migrations[:len(migrations):len(migrations)], migration{version: len(migrations) + 1, name: "bad.sql", sql: `CREATE TABLE turns (x)`})
	if err := migrate(context.Background(), db, bad); err == nil {
		t.Fatal("a failing migration succeeded")
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('schema_version', 'conversations', 'turns')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d tables left by a failed migration, want none", n)
	}
}
