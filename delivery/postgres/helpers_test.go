package postgres_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mombot/mombot/delivery/postgres"
	"github.com/mombot/mombot/internal/pgtest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newPool returns a pool on the test database, closed when the test ends.
func newPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.URL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// newInbox returns an Inbox in schema on a pool of its own, as a replica's.
func newInbox(tb testing.TB, schema string) *postgres.Inbox {
	tb.Helper()
	in, err := postgres.NewInbox(context.Background(), newPool(tb), &postgres.InboxOptions{Schema: schema})
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// newLocker returns a Locker in schema on a pool of its own, as a
// replica's.
func newLocker(tb testing.TB, schema string, opts *postgres.LockerOptions) *postgres.Locker {
	tb.Helper()
	var o postgres.LockerOptions
	if opts != nil {
		o = *opts
	}
	o.Schema = schema
	if o.Logger == nil {
		o.Logger = quiet
	}
	l, err := postgres.NewLocker(context.Background(), newPool(tb), &o)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}
