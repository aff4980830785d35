package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// open opens a store on a new database in a temporary directory and closes
// it when the test ends.
func open(t testing.TB, opts *sqlite.Options) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mombot.db")
	s, err := sqlite.Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

// rawDB opens the database file directly, as another program would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db := rawDBTB(t, path)
	t.Cleanup(func() { db.Close() })
	return db
}

func rawDBTB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func turn(user, reply string) conversation.Turn {
	return conversation.Turn{Messages: storetest.TextTurn(user, reply)}
}

var lim = conversation.Limits{Timeout: conversation.DefaultTimeout, MaxTurns: conversation.DefaultMaxTurns}

func TestFileModes(t *testing.T) {
	s, path := open(t, nil)
	if err := s.Append(context.Background(), "+14155551234", turn("hi", "hello"), time.Now(), lim); err != nil {
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

func TestPragmas(t *testing.T) {
	_, path := open(t, nil)
	var mode string
	if err := rawDB(t, path).QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		opts *sqlite.Options
	}{
		{"empty path", "", nil},
		{"query in path", filepath.Join(dir, "a.db?mode=ro"), nil},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "a.db"), nil},
		{"negative busy timeout", filepath.Join(dir, "b.db"), &sqlite.Options{BusyTimeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := sqlite.Open(tt.path, tt.opts)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if !strings.HasPrefix(err.Error(), "sqlite: open") {
				t.Errorf("error %q does not start with \"sqlite: open\"", err)
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	s, _ := open(t, nil)
	ctx := context.Background()
	if _, err := s.Load(ctx, "+1"); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("Load: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "+1"); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("Delete: err = %v, want ErrNotFound", err)
	}
}

func TestCorruptRowsRepaired(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s, path := open(t, &sqlite.Options{Logger: log})
	ctx := context.Background()
	now := time.Now()
	const phone = "+14155551234"
	if err := s.Append(ctx, phone, turn("first", "one"), now, lim); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	for seq, data := range map[int]string{
		2: `{"messages":[{"role":"assistant","content":"a reply without a question"}]}`,
		3: `not JSON at all`,
		4: `{"usage":{}}`,
	} {
		if _, err := db.Exec(`INSERT INTO turns (phone, seq, json) VALUES (?, ?, ?)`, phone, seq, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, phone, turn("second", "two"), now, lim); err != nil {
		t.Fatal(err)
	}

	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range c.Turns {
		got = append(got, tr.Messages[0].Text())
	}
	if strings.Join(got, ",") != "first,second" {
		t.Fatalf("Load kept turns %q, want [first second]", got)
	}
	if err := conversation.ValidateTurn(c.Messages()); err != nil {
		t.Fatalf("repaired history is invalid: %v", err)
	}
	if l := logs.String(); !strings.Contains(l, "dropped=3") || strings.Contains(l, phone) {
		t.Fatalf("log = %q, want a warning with dropped=3 and the phone masked", l)
	}
}

// TestEditedRowsValidated: a row changed since it was saved (its checksum
// no longer matches) is decoded and validated like a row of an older
// version, and dropped when invalid; the rows around it are kept.
func TestEditedRowsValidated(t *testing.T) {
	var logs bytes.Buffer
	s, path := open(t, &sqlite.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	now := time.Now()
	const phone = "+14155551234"
	for _, text := range []string{"first", "second", "third"} {
		if err := s.Append(ctx, phone, turn(text, "ok"), now, lim); err != nil {
			t.Fatal(err)
		}
	}
	db := rawDB(t, path)
	// Same shape, checksum kept: only the checksum tells that it changed.
	edited := `{"messages":[{"role":"assistant","content":"second"}]}`
	if _, err := db.Exec(`UPDATE turns SET json = ? WHERE phone = ? AND seq = 2`, edited, phone); err != nil {
		t.Fatal(err)
	}
	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range c.Turns {
		got = append(got, tr.Messages[0].Text())
	}
	if strings.Join(got, ",") != "first,third" {
		t.Fatalf("Load kept turns %q, want [first third]", got)
	}
	if !strings.Contains(logs.String(), "dropped=1") {
		t.Fatalf("log = %q, want a warning with dropped=1", logs.String())
	}
}

// TestToolIDsOfOldRowsChecked: rows written before the tool_ids column have
// their json read for the check that a new turn reuses no id.
func TestToolIDsOfOldRowsChecked(t *testing.T) {
	s, path := open(t, nil)
	ctx := context.Background()
	now := time.Now()
	const phone = "+14155551234"
	if err := s.Append(ctx, phone, turn("hello", "hi"), now, lim); err != nil {
		t.Fatal(err)
	}
	old := conversation.Turn{Messages: storetest.ToolTurn("find", "toolu_old", "found", "here")}
	data, err := old.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, path).Exec(`INSERT INTO turns (phone, seq, json) VALUES (?, 2, ?)`, phone, data); err != nil {
		t.Fatal(err)
	}
	again := conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_old", "found", "here")}
	if err := s.Append(ctx, phone, again, now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("a tool id of an old row reused: Append err = %v, want ErrInvalidTurn", err)
	}
	c, err := s.Load(ctx, phone)
	if err != nil || len(c.Turns) != 2 {
		t.Fatalf("Load = %d turns, %v; want the 2 stored", len(c.Turns), err)
	}
}

// TestFullConversationRecyclesRow: a save into a full conversation rewrites
// the row of the turn the cap drops, so the phone keeps the same rows (and
// pages), and the history reads as if a row were added and the oldest
// deleted; a conversation under the cap gets a new row.
func TestFullConversationRecyclesRow(t *testing.T) {
	s, path := open(t, nil)
	db := rawDB(t, path)
	ctx := context.Background()
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 3}
	now := storetest.Start
	rowids := func() []int64 {
		t.Helper()
		rows, err := db.Query(`SELECT rowid FROM turns WHERE phone = '+1' ORDER BY rowid`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		return out
	}
	texts := []string{"a", "b", "c", "d", "e"}
	var full []int64
	for i, text := range texts {
		if err := s.Append(ctx, "+1", turn(text, "ok"), now, lim); err != nil {
			t.Fatal(err)
		}
		got := rowids()
		switch {
		case i < 3 && len(got) != i+1:
			t.Fatalf("after %d saves, rows %v, want %d", i+1, got, i+1)
		case i == 2:
			full = got
		case i > 2 && !slices.Equal(got, full):
			t.Fatalf("save %d into a full conversation: rows %v, want the same rows %v", i+1, got, full)
		}
	}
	c, err := s.Load(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range c.Turns {
		got = append(got, tr.Messages[0].Text())
	}
	if strings.Join(got, ",") != "c,d,e" {
		t.Fatalf("history %q, want c,d,e", got)
	}
}
