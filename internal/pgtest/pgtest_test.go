package pgtest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mombot/mombot/internal/pgtest"
)

// recorder is a testing.TB that records what a helper skips instead of
// ending the test that runs it.
type recorder struct {
	testing.TB
	skipped string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}

// run calls fn with r on a goroutine of its own, so that a Skip ends only
// fn, and reports whether fn returned normally.
func (r *recorder) run(fn func(testing.TB)) (returned bool) {
	done := make(chan bool)
	go func() {
		ok := false
		defer func() { done <- ok }()
		fn(r)
		ok = true
	}()
	return <-done
}

// Without MOMBOT_TEST_POSTGRES_URL every helper skips, and the message
// says which variable to set and to what.
func TestSkipsWithoutURL(t *testing.T) {
	t.Setenv(pgtest.EnvURL, "")
	for name, fn := range map[string]func(testing.TB){
		"URL":    func(tb testing.TB) { pgtest.URL(tb) },
		"Conn":   func(tb testing.TB) { pgtest.Conn(tb) },
		"Name":   func(tb testing.TB) { pgtest.Name(tb) },
		"Schema": func(tb testing.TB) { pgtest.Schema(tb) },
	} {
		r := &recorder{TB: t}
		if r.run(fn) {
			t.Errorf("%s returned without MOMBOT_TEST_POSTGRES_URL instead of skipping", name)
		}
		if !strings.Contains(r.skipped, "MOMBOT_TEST_POSTGRES_URL") || !strings.Contains(r.skipped, "postgres://") {
			t.Errorf("%s skipped with %q, want a message naming MOMBOT_TEST_POSTGRES_URL and an example URL", name, r.skipped)
		}
	}
}

func schemaExists(t *testing.T, conn *pgx.Conn, name string) bool {
	t.Helper()
	var ok bool
	if err := conn.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// A schema is the test's own: two differ, and when the test that took one
// ends, it is gone with its tables, while another test's schema stays.
// Name makes no schema, but drops one made under it.
func TestSchemaDroppedWithItsTest(t *testing.T) {
	conn := pgtest.Conn(t)
	ctx := context.Background()
	outer := pgtest.Schema(t)
	var inner, named string
	t.Run("inner", func(t *testing.T) {
		inner = pgtest.Schema(t)
		if _, err := conn.Exec(ctx, `CREATE TABLE `+pgx.Identifier{inner, "t"}.Sanitize()+` (x int)`); err != nil {
			t.Fatal(err)
		}
		named = pgtest.Name(t)
		if schemaExists(t, conn, named) {
			t.Errorf("Name created schema %s", named)
		}
		if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{named}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	})
	if inner == outer || inner == named || !strings.HasPrefix(inner, "mombot_test_") {
		t.Fatalf("schemas %q, %q and %q: want three different mombot_test_ schemas", outer, inner, named)
	}
	if schemaExists(t, conn, inner) || schemaExists(t, conn, named) {
		t.Errorf("the ended test's schemas %s and %s are still there", inner, named)
	}
	if !schemaExists(t, conn, outer) {
		t.Errorf("the running test's schema %s was dropped", outer)
	}
}
