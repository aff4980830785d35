package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

const kind conversation.Kind = "sqlite-test"

// rawExec runs statements on the database at path as another program would.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// rawInt reads one number from the database at path.
func rawInt(t *testing.T, path, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// seed writes one record into a new database and returns its path.
func seed(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mombot.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), kind, conversation.Record{Key: "k", Data: []byte(`"seeded"`)}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSchemaSetUp: a writer sets up the schema of a new file, or of an
// empty one, once; opening it again changes nothing.
func TestSchemaSetUp(t *testing.T) {
	for _, tt := range []struct {
		name   string
		create func(path string) error
	}{
		{"no file", func(string) error { return nil }},
		{"empty file", func(path string) error { return os.WriteFile(path, nil, 0o600) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mombot.db")
			if err := tt.create(path); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			opts := &sqlite.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			for i := range 3 {
				s, err := sqlite.Open(path, opts)
				if err != nil {
					t.Fatalf("Open %d: %v", i, err)
				}
				if _, err := s.Put(context.Background(), kind, conversation.Record{Key: string(rune('a' + i)), Data: []byte(`1`)}, 0); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if got := strings.Count(logs.String(), "set up the database schema"); got != 1 {
				t.Errorf("the schema was set up %d times in three opens, want once:\n%s", got, logs.String())
			}
			if v := rawInt(t, path, "PRAGMA user_version"); v != 1 {
				t.Errorf("schema version %d, want 1", v)
			}
			if n := rawInt(t, path, "SELECT count(*) FROM records"); n != 3 {
				t.Errorf("%d records after three opens, want 3", n)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 && tt.name == "no file" {
				t.Errorf("new database: %v, %v; want mode 0600", fi.Mode(), err)
			}
		})
	}
}

// TestRefused: a file that is not a database, a damaged one, and a
// database of a schema this program does not know are refused by a writer
// and reported by a reader, each in its own words, and left as they are.
func TestRefused(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		make  func(t *testing.T, path string)
		want  error
		words string
	}{
		{"JSON file", func(t *testing.T, path string) {
			os.WriteFile(path, []byte(`{"+14155551234": {"last_active": "2026-02-24T10:35:00", "turns": []}}`+"\n"), 0o600)
		}, sqlite.ErrCorrupt, "not an SQLite database"},
		{"damaged", func(t *testing.T, path string) {
			data, err := os.ReadFile(seed(t))
			if err != nil {
				t.Fatal(err)
			}
			for i := 4096; i < len(data); i++ { // every page but the first
				data[i] = 0x5a
			}
			os.WriteFile(path, data, 0o600)
		}, sqlite.ErrCorrupt, "damaged"},
		{"newer schema", func(t *testing.T, path string) {
			os.Rename(seed(t), path)
			rawExec(t, path, "PRAGMA user_version = 99")
		}, sqlite.ErrSchemaTooNew, "schema version 99; this one knows up to 1"},
		{"development layout", func(t *testing.T, path string) {
			rawExec(t, path, "PRAGMA journal_mode = WAL",
				"CREATE TABLE schema_version (version INTEGER NOT NULL)", "INSERT INTO schema_version VALUES (6)",
				"CREATE TABLE conversations (phone TEXT NOT NULL PRIMARY KEY, last_active INTEGER NOT NULL, turn_ids TEXT)",
				"INSERT INTO conversations VALUES ('+14155551234', 1771929300123456000, NULL)")
		}, sqlite.ErrSchemaUnknown, "development version of mombot from before v0.1.0"},
		{"another program's database", func(t *testing.T, path string) {
			rawExec(t, path, "CREATE TABLE notes (text TEXT)", "INSERT INTO notes VALUES ('milk')", "PRAGMA user_version = 1")
		}, sqlite.ErrSchemaUnknown, "another program's database"},
	} {
		for _, readOnly := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "/writer", true: "/reader"}[readOnly], func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "mombot.db")
				tt.make(t, path)
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				before := storetest.Files(t, dir)
				s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: readOnly})
				if err == nil { // damage beyond the first page shows when it is read
					_, err = s.List(ctx, kind, "")
					s.Close()
				}
				if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.words) || !strings.Contains(err.Error(), path) {
					t.Errorf("Open and List = %v; want an error wrapping %v that names the file and says %q", err, tt.want, tt.words)
				}
				storetest.SameFiles(t, dir, before, "opening it")
				if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
					t.Error("opening it changed the file's content")
				}
			})
		}
	}
}

// TestOpenPaths: a path is a path, whatever characters it holds; one that
// cannot be a file is an error naming it.
func TestOpenPaths(t *testing.T) {
	dir := t.TempDir()
	odd := filepath.Join(dir, "a ?mode=ro#%41 é.db")
	s, err := sqlite.Open(odd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), kind, conversation.Record{Key: "k", Data: []byte(`1`)}, 0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != filepath.Base(odd) {
		t.Errorf("Open(%q) made %v", odd, entries)
	}
	s, err = sqlite.Open(odd, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Get(context.Background(), kind, "k"); err != nil || string(r.Data) != "1" {
		t.Errorf("Get from %q = %q, %v; want 1", odd, r.Data, err)
	}
	s.Close()

	for _, path := range []string{"", filepath.Join(dir, "no", "such", "folder", "a.db"), dir} {
		s, err := sqlite.Open(path, nil)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", path)
			continue
		}
		if !strings.HasPrefix(err.Error(), "sqlite: open") || !strings.Contains(err.Error(), path) {
			t.Errorf("Open(%q) = %q, want it to start \"sqlite: open\" and name the path", path, err)
		}
	}
}
