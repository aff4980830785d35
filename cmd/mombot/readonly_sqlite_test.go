package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

// readOnlyCommands are the commands that only look at the store.
var readOnlyCommands = [][]string{
	{"history", "list"},
	{"history", "show", "+14155551234"},
	{"usage"},
	{"usage", "--json"},
}

// TestReadOnlyCommandsSQLite: history list, history show and usage read an
// SQLite store without leaving a file created or changed, also while
// another connection writes to it, and then show the turns it committed
// last.
func TestReadOnlyCommandsSQLite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mombot.db")
	vars := map[string]string{"MOMBOT_STORE": "sqlite:" + path}
	ctx := context.Background()
	w, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := conversation.New(w, nil)
	if err := mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("first question", "first answer")); err != nil {
		t.Fatal(err)
	}
	if err := mem.AddUsage(ctx, "+14155551234", time.Now(), conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, InputTokens: 5, OutputTokens: 5}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	check := func(t *testing.T, want string) {
		t.Helper()
		for _, args := range readOnlyCommands {
			before := storetest.Files(t, dir)
			out, errOut, code := runCmd(t, vars, args...)
			if code != 0 {
				t.Errorf("%s: exit %d, %s", strings.Join(args, " "), code, errOut)
			}
			if len(args) > 1 && args[1] == "show" && !strings.Contains(out, want) {
				t.Errorf("%s: %q, want %q", strings.Join(args, " "), out, want)
			}
			storetest.SameFiles(t, dir, before, strings.Join(args, " "))
		}
	}
	t.Run("no writer", func(t *testing.T) {
		if files := storetest.Files(t, dir); len(files) != 1 {
			t.Fatalf("want the database alone, have %v", files)
		}
		check(t, "first answer")
	})
	t.Run("while a writer has it open", func(t *testing.T) {
		w, err := sqlite.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		mem, _ := conversation.New(w, nil)
		if err := mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("second question", "second answer")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path + "-wal"); err != nil {
			t.Fatalf("the writer has no -wal: %v", err)
		}
		check(t, "second answer")
	})
}

// TestReadOnlyCommandsSQLiteBadStore: on an SQLite store of a newer
// schema, or a file that is not one, history list, history show and usage
// exit 1 saying so in words, and leave the file as it is: they migrate
// nothing.
func TestReadOnlyCommandsSQLiteBadStore(t *testing.T) {
	for _, tt := range []struct {
		name  string
		make  func(t *testing.T, path string)
		words []string
	}{
		{"a newer schema", func(t *testing.T, path string) {
			s, err := sqlite.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
				t.Fatal(err)
			}
		}, []string{"written by a newer mombot (schema version 99"}},
		{"not a database", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not an SQLite database", "left as it is"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "mombot.db")
			tt.make(t, path)
			before := storetest.Files(t, dir)
			vars := map[string]string{"MOMBOT_STORE": "sqlite:" + path}
			for _, args := range readOnlyCommands {
				out, errOut, code := runCmd(t, vars, args...)
				if code != 1 || strings.Contains(out, "no conversations") {
					t.Errorf("%s: exit %d, %q; want exit 1", strings.Join(args, " "), code, out)
				}
				for _, w := range tt.words {
					if !strings.Contains(errOut, w) {
						t.Errorf("%s: %q does not say %q", strings.Join(args, " "), errOut, w)
					}
				}
				storetest.SameFiles(t, dir, before, strings.Join(args, " "))
			}
		})
	}
}
