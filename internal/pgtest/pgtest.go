// Package pgtest gives the tests that need PostgreSQL a server and a schema
// of their own: the database named by MOMBOT_TEST_POSTGRES_URL (the tests
// skip, saying how to set it, when it is not set), a connection to it, and a
// schema that no other test uses, dropped with everything in it when the
// test ends.
//
// Many test processes, and other people's, share that database: nothing
// here drops or changes anything but the schemas it made for the test.
package pgtest

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvURL is the environment variable that names the PostgreSQL database the
// tests may write to, such as
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable.
const EnvURL = "MOMBOT_TEST_POSTGRES_URL"

// SkipMessage is why a test skips when EnvURL is not set.
const SkipMessage = EnvURL + " is not set: set it to a PostgreSQL database the tests may write to, such as postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// URL returns the database the tests run against, or skips the test with
// SkipMessage.
func URL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		tb.Skip(SkipMessage)
	}
	return url
}

// Conn returns a connection to the test database, closed when the test
// ends, for looking at tables as another program would. It skips as URL
// does.
func Conn(tb testing.TB) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), URL(tb))
	if err != nil {
		tb.Fatalf("%s: %v", EnvURL, err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Name returns a schema name of the test's own, "mombot_test_" and 12
// random characters, without creating the schema, and drops the schema, if
// something made it, with everything in it when the test ends. It skips as
// URL does.
func Name(tb testing.TB) string {
	tb.Helper()
	name, _ := newName(tb)
	return name
}

// Schema returns the name of a new, empty schema of the test's own (see
// Name), dropped with everything in it when the test ends.
func Schema(tb testing.TB) string {
	tb.Helper()
	name, conn := newName(tb)
	if _, err := conn.Exec(context.Background(), `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("create schema %s: %v", name, err)
	}
	return name
}

func newName(tb testing.TB) (string, *pgx.Conn) {
	tb.Helper()
	name := "mombot_test_" + strings.ToLower(rand.Text()[:12])
	conn := Conn(tb)
	tb.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			tb.Errorf("cleanup of schema %s: %v", name, err)
		}
	})
	return name, conn
}
