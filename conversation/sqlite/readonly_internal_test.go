package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
)

// closedDB makes a database at a new path with setup, which must close
// it, so that no -wal or -shm is left.
func closedDB(t *testing.T, setup func(ctx context.Context, path string)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mombot.db")
	setup(context.Background(), path)
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Fatalf("setup left %s%s open", path, suffix)
		}
	}
	return path
}

// TestReadOnlySchemas: a read-only store runs no migration. A database of
// an older schema is refused with ErrSchemaTooOld and words that say what
// upgrades it, one of a newer schema with ErrSchemaTooNew, one without
// mombot's tables with ErrSchemaTooOld; each is left as it was.
func TestReadOnlySchemas(t *testing.T) {
	withVersion := func(v int) func(ctx context.Context, path string) {
		return func(ctx context.Context, path string) {
			db := rawOpen(t, path)
			if err := migrate(ctx, db, migrations[:min(v, len(migrations))]); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`UPDATE schema_version SET version = ?`, v); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}
	}
	for _, tt := range []struct {
		name  string
		setup func(ctx context.Context, path string)
		want  error
		words []string
	}{
		{"version 1", withVersion(1), ErrSchemaTooOld, []string{fmt.Sprintf("written by an older mombot (schema version 1; this one reads %d and later)", readableFrom), "mombot serve", "upgrades it"}},
		{"version 4", withVersion(4), ErrSchemaTooOld, []string{fmt.Sprintf("written by an older mombot (schema version 4; this one reads %d and later)", readableFrom)}},
		{"version 99", withVersion(99), ErrSchemaTooNew, []string{fmt.Sprintf("written by a newer mombot (schema version 99; this one knows up to %d)", len(migrations))}},
		{"another program's", func(ctx context.Context, path string) {
			db := rawOpen(t, path)
			if _, err := db.Exec(`CREATE TABLE notes (text TEXT)`); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}, ErrSchemaTooOld, []string{"has no mombot tables"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := closedDB(t, tt.setup)
			before := storetest.Files(t, filepath.Dir(path))
			s, err := Open(path, &Options{ReadOnly: true})
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open(ReadOnly): %v, want %v", err, tt.want)
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open(ReadOnly): %q does not say %q", err, w)
				}
			}
			storetest.SameFiles(t, filepath.Dir(path), before, "Open(ReadOnly)")
		})
	}

	// The writing Open upgrades what the read-only one refused.
	path := closedDB(t, withVersion(3))
	if s, err := Open(path, &Options{ReadOnly: true}); !errors.Is(err, ErrSchemaTooOld) {
		t.Fatalf("Open(ReadOnly) of version 3: %v", err)
	} else if s != nil {
		s.Close()
	}
	if got := schemaVersion(t, rawOpen(t, path)); got != 3 {
		t.Fatalf("the read-only Open left schema version %d, want 3", got)
	}
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	s, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open(ReadOnly) after the upgrade: %v", err)
	}
	s.Close()
}

// TestReadOnlyReadsThePreviousSchema: a database the previous release
// wrote (schema 5, before 0006's turn index) is read as it is, so that
// history list and show work after an upgrade of the binary before any
// writing command has run, and is left at version 5, unchanged.
func TestReadOnlyReadsThePreviousSchema(t *testing.T) {
	if readableFrom != 5 || len(migrations) < 6 || !strings.Contains(migrations[5].name, "turn_index") {
		t.Fatalf("this test makes a version-5 database by undoing 0006_turn_index; readableFrom is %d", readableFrom)
	}
	ctx := context.Background()
	const phone = "+14155551234"
	var want []byte
	path := closedDB(t, func(ctx context.Context, path string) {
		w, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		mem, _ := conversation.New(w, nil)
		if err := mem.SaveTurn(ctx, phone, []conversation.Message{
			conversation.UserText("what is on the list?"),
			conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("milk and eggs")),
		}); err != nil {
			t.Fatal(err)
		}
		msgs, err := mem.Peek(ctx, phone)
		if err != nil {
			t.Fatal(err)
		}
		if want, err = json.Marshal(msgs); err != nil {
			t.Fatal(err)
		}
		w.Close()
		// What the previous release's database looks like: no turn_ids.
		db := rawOpen(t, path)
		for _, q := range []string{`ALTER TABLE conversations DROP COLUMN turn_ids`, `UPDATE schema_version SET version = 5`} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		db.Close()
	})
	before := storetest.Files(t, filepath.Dir(path))

	r, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open(ReadOnly) of version 5: %v", err)
	}
	mem, _ := conversation.New(r, nil)
	msgs, err := mem.Peek(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(msgs); string(got) != string(want) {
		t.Errorf("history read from version 5:\n%s\nwant\n%s", got, want)
	}
	if sums, err := mem.List(ctx); err != nil || len(sums) != 1 || sums[0].Turns != 1 {
		t.Errorf("List = %+v, %v; want one conversation of one turn", sums, err)
	}
	r.Close()

	storetest.SameFiles(t, filepath.Dir(path), before, "the read-only store")
	if got := schemaVersion(t, rawOpen(t, path)); got != 5 {
		t.Errorf("schema version %d after the read, want 5", got)
	}
}

// TestReadOnlyReadsAgainAfterAChange: a read of a database with no -wal
// takes no locks, so when a writer starts and commits while it reads, its
// result is not used: it reads again, through the writer's -wal, and sees
// the commit.
func TestReadOnlyReadsAgainAfterAChange(t *testing.T) {
	ctx := context.Background()
	path := closedDB(t, func(ctx context.Context, path string) {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	})
	r, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	var writer *Store
	defer func() {
		if writer != nil {
			writer.Close()
		}
	}()
	var attempts []bool
	testHookRead = func(live bool) {
		attempts = append(attempts, live)
		if writer != nil {
			return
		}
		if writer, err = Open(path, nil); err != nil {
			t.Error(err)
			return
		}
		mem, _ := conversation.New(writer, nil)
		if err := mem.SaveTurn(ctx, "+14155551234", []conversation.Message{
			conversation.UserText("hi"), conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("hello")),
		}); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookRead = nil }()

	sums, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 {
		t.Fatalf("List = %+v, want the conversation the writer saved during the read", sums)
	}
	if len(attempts) != 2 || attempts[0] || !attempts[1] {
		t.Fatalf("attempts (true: through the -wal) = %v, want [false true]", attempts)
	}
}
