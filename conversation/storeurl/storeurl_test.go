package storeurl_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/postgres"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/internal/pgtest"
)

func TestParse(t *testing.T) {
	tests := []struct {
		url  string
		want storeurl.Spec
		err  string // part of the error, "" for none
	}{
		{"", storeurl.Spec{Kind: "file", Path: jsonfile.DefaultPath()}, ""},
		{"file:", storeurl.Spec{}, "needs a path"},
		{"file://", storeurl.Spec{}, "needs a path"},
		{"data/c.json", storeurl.Spec{Kind: "file", Path: "data/c.json"}, ""},
		{"/srv/c.json", storeurl.Spec{Kind: "file", Path: "/srv/c.json"}, ""},
		{"./a:b.json", storeurl.Spec{Kind: "file", Path: "./a:b.json"}, ""},
		{`C:\data\c.json`, storeurl.Spec{Kind: "file", Path: `C:\data\c.json`}, ""},
		{"file:data/c.json", storeurl.Spec{Kind: "file", Path: "data/c.json"}, ""},
		{"file:///srv/c.json", storeurl.Spec{Kind: "file", Path: "/srv/c.json"}, ""},
		{"sqlite:data/m.db", storeurl.Spec{Kind: "sqlite", Path: "data/m.db"}, ""},
		{"sqlite:/srv/m.db", storeurl.Spec{Kind: "sqlite", Path: "/srv/m.db"}, ""},
		{"redis://127.0.0.1:6379/0", storeurl.Spec{Kind: "redis", RedisURL: "redis://127.0.0.1:6379/0"}, ""},
		{"redis://:pw@cache:6380/2", storeurl.Spec{Kind: "redis", RedisURL: "redis://:pw@cache:6380/2"}, ""},
		{"rediss://cache:6380/1", storeurl.Spec{Kind: "redis", RedisURL: "rediss://cache:6380/1"}, ""},
		{"redis://h:1/0?prefix=team:", storeurl.Spec{Kind: "redis", RedisURL: "redis://h:1/0", Prefix: "team:"}, ""},
		{"redis://h:1/0?read_timeout=2s&prefix=p:", storeurl.Spec{Kind: "redis", RedisURL: "redis://h:1/0?read_timeout=2s", Prefix: "p:"}, ""},
		{"sqlite:", storeurl.Spec{}, "needs a path"},
		{"ftp://host/c.json", storeurl.Spec{}, "unknown kind"},
		{"postgres://mombot:pw@db:5432/mombot?sslmode=require", storeurl.Spec{Kind: "postgres", PostgresURL: "postgres://mombot:pw@db:5432/mombot?sslmode=require"}, ""},
		{"postgresql://db/mombot?schema=family&sslmode=disable", storeurl.Spec{Kind: "postgres", PostgresURL: "postgresql://db/mombot?sslmode=disable", Schema: "family"}, ""},
		{"postgres:x", storeurl.Spec{}, "not a postgres://"},
		{"postgres://:s3cret@[::1", storeurl.Spec{}, "not a postgres://"},
		{"mysql://u:s3cret@db/x", storeurl.Spec{}, "unknown kind"},
		{"redis://[::1", storeurl.Spec{}, "not a redis://"},
		{"redis:cache:6379", storeurl.Spec{}, "not a redis://"},
		{"redis://:s3cret@[::1", storeurl.Spec{}, "not a redis://"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := storeurl.Parse(tt.url)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, storeurl.ErrBadURL) {
					t.Fatalf("err = %v, want an ErrBadURL with %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("the error repeats the password: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("= %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestSame(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	tests := []struct {
		a, b string
		same bool
	}{
		{a, "file:" + a, true},
		{a, filepath.Join(dir, "x", "..", "a.json"), true},
		{a, "sqlite:" + a, true},
		{a, filepath.Join(dir, "b.json"), false},
		{"redis://localhost/0", "redis://127.0.0.1:6379/0", true},
		{"redis://LOCALHOST:6379", "redis://[::1]:6379/0", true},
		{"redis://h/0", "rediss://:pw@h:6379/0?prefix=mombot:", true},
		{"redis://h/0", "redis://h/1", false},
		{"redis://h/0", "redis://h:6380/0", false},
		{"redis://h/0", "redis://h/0?prefix=other:", false},
		{"redis://h/0", "redis://g/0", false},
		{a, "redis://h/0", false},
		{"postgres://localhost/mombot", "postgresql://u:pw@127.0.0.1:5432/mombot?sslmode=disable", true},
		{"postgres://mombot@db/", "postgres://db/mombot?user=mombot&schema=public", true},
		{"postgres://db/mombot", "postgres://db/mombot?schema=other", false},
		{"postgres://db/mombot", "postgres://db/other", false},
		{"postgres://db/mombot", "postgres://db:5433/mombot", false},
		{"postgres://db/mombot", "redis://db/0", false},
		{"sqlite:" + a, "postgres://db/mombot", false},
	}
	for _, tt := range tests {
		got, err := storeurl.Same(tt.a, tt.b)
		if err != nil || got != tt.same {
			t.Errorf("Same(%q, %q) = %v, %v; want %v", tt.a, tt.b, got, err, tt.same)
		}
	}
	// A symbolic link to a file not created yet is that file.
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(a, link); err != nil {
		t.Skip(err)
	}
	if same, err := storeurl.Same(a, link); err != nil || !same {
		t.Errorf("Same(file, link to it) = %v, %v; want true", same, err)
	}
}

// TestOpen: each kind opens the store it names; with MustExist a missing
// file or database is an error wrapping fs.ErrNotExist that creates
// nothing.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, url := range []string{filepath.Join(dir, "c.json"), "sqlite:" + filepath.Join(dir, "m.db")} {
		_, err := storeurl.Open(ctx, url, &storeurl.Options{MustExist: true})
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%s, MustExist) = %v, want fs.ErrNotExist", url, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("Open(%s, MustExist) created %s", url, entries[0].Name())
		}
	}
	s, err := storeurl.Open(ctx, "file:"+filepath.Join(dir, "c.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*jsonfile.Store); !ok {
		t.Errorf("file: opened a %T", s)
	}
	s.Close()
	s, err = storeurl.Open(ctx, "sqlite:"+filepath.Join(dir, "m.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*sqlite.Store); !ok {
		t.Errorf("sqlite: opened a %T", s)
	}
	s.Close()
	if _, err := storeurl.Open(ctx, "ftp://x", nil); !errors.Is(err, storeurl.ErrBadURL) {
		t.Errorf("Open(ftp://x) = %v, want ErrBadURL", err)
	}
}

func TestDisplayAndDir(t *testing.T) {
	for _, url := range []string{
		"redis://:s3cret@h:6379/0",
		"postgres://mombot:s3cret@db:5432/mombot?schema=family",
		"postgresql://db/mombot?password=s3cret",
		"postgres://mombot:s3cret@db:port/mombot",
	} {
		for name, got := range map[string]string{"Display": storeurl.Display(url), "Redact": storeurl.Redact(url)} {
			if strings.Contains(got, "s3cret") || !strings.Contains(got, "xxxxx") {
				t.Errorf("%s(%s) = %s: want the password hidden", name, url, got)
			}
		}
	}
	for url, want := range map[string]string{"postgresql://db/mombot": "postgres", "postgres://db/mombot": "postgres", "redis://h/0": "redis", "sqlite:m.db": "sqlite"} {
		if got := storeurl.Kind(url); got != want {
			t.Errorf("Kind(%s) = %s, want %s", url, got, want)
		}
	}
	if got := storeurl.Display("sqlite:data/m.db"); got != "sqlite:data/m.db" {
		t.Errorf("Display(sqlite:data/m.db) = %s", got)
	}
	for url, want := range map[string]string{
		"sqlite:/srv/m.db": "/srv", "/srv/c.json": "/srv", "redis://h/0": filepath.Dir(jsonfile.DefaultPath()), "": filepath.Dir(jsonfile.DefaultPath()),
		"postgres://db/mombot": filepath.Dir(jsonfile.DefaultPath()),
	} {
		if got := storeurl.Dir(url); got != want {
			t.Errorf("Dir(%q) = %q, want %q", url, got, want)
		}
	}
}

func ExampleParse() {
	spec, _ := storeurl.Parse("redis://cache:6379/0?prefix=family:")
	fmt.Println(spec.Kind, spec.RedisURL, spec.Prefix)
	spec, _ = storeurl.Parse("data/conversations.json")
	fmt.Println(spec.Kind, spec.Path)
	// Output:
	// redis redis://cache:6379/0 family:
	// file data/conversations.json
}

// TestOpenReadOnly: ReadOnly opens an SQLite database read-only: it reads,
// refuses to write, and leaves no file behind once closed.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "m.db")
	w, err := storeurl.Open(ctx, "sqlite:"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := conversation.New(w, nil)
	if err := mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("hi", "hello")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(dir)

	s, err := storeurl.Open(ctx, "sqlite:"+path, &storeurl.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if recs, err := s.List(ctx, conversation.Conversations, ""); err != nil || len(recs) != 1 {
		t.Errorf("List = %+v, %v; want the saved conversation", recs, err)
	}
	if err := s.Delete(ctx, conversation.Conversations, "+14155551234", 0); !errors.Is(err, conversation.ErrReadOnly) {
		t.Errorf("Delete on a read-only store: %v, want conversation.ErrReadOnly", err)
	}
	s.Close()
	if after, _ := os.ReadDir(dir); len(after) != len(before) || len(after) != 1 {
		t.Errorf("a read-only store left %v, want %v", after, before)
	}
}

// TestOpenPostgres: a postgres URL opens a PostgreSQL store in the schema
// its ?schema= names; read-only, on a schema where no writer ran, it is an
// error that creates nothing.
func TestOpenPostgres(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Name(t)
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	url += sep + "schema=" + schema
	if _, err := storeurl.Open(ctx, url, &storeurl.Options{ReadOnly: true}); !errors.Is(err, postgres.ErrNoSchema) {
		t.Errorf("Open(read-only) where no writer ran = %v, want postgres.ErrNoSchema", err)
	}
	var exists bool
	if err := pgtest.Conn(t).QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil || exists {
		t.Errorf("Open(read-only) created schema %s (%v)", schema, err)
	}
	s, err := storeurl.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ps, ok := s.(*postgres.Store)
	if !ok || ps.Schema() != schema {
		t.Fatalf("opened a %T, want a *postgres.Store in schema %s", s, schema)
	}
}
