package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/pgtest"
)

// after's end is after every key with the prefix and before every other key
// after the prefix, byte by byte.
func TestAfter(t *testing.T) {
	tests := []struct {
		prefix, end string
		ok          bool
	}{
		{"", "", false},
		{"2026-02-24/", "2026-02-240", true},
		{"a", "b", true},
		{"é", "ê", true},
		{"a\u007f", "a\u0080", true},
		{"a\ud7ff", "a\ue000", true},
		{"a\U0010FFFF", "b", true},
		{"\U0010FFFF\U0010FFFF", "", false},
	}
	for _, tt := range tests {
		end, ok := after(tt.prefix)
		if end != tt.end || ok != tt.ok {
			t.Errorf("after(%q) = %q, %t; want %q, %t", tt.prefix, end, ok, tt.end, tt.ok)
		}
		if !ok {
			continue
		}
		if !utf8.ValidString(end) {
			t.Errorf("after(%q) = %q: not UTF-8", tt.prefix, end)
		}
		for _, key := range []string{tt.prefix, tt.prefix + "\x00", tt.prefix + "\U0010FFFF\U0010FFFF", tt.prefix + "zzz"} {
			if !(key < end) {
				t.Errorf("key %q with the prefix %q is not before %q", key, tt.prefix, end)
			}
		}
		if strings.HasPrefix(end, tt.prefix) {
			t.Errorf("the end %q starts with the prefix %q", end, tt.prefix)
		}
	}
}

// List's statement reads a range of the primary key's index, bounded at
// both ends, also in the generic plan that PostgreSQL may settle on for a
// prepared statement run many times.
func TestListReadsARange(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t)
	s, err := Open(context.Background(), url, &Options{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn := pgtest.Conn(t)
	ctx := context.Background()
	for _, set := range []string{`SET enable_seqscan = off`, `SET plan_cache_mode = force_generic_plan`} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	end, _ := after("2026-02-24/")
	rows, _ := conn.Query(ctx, `EXPLAIN `+s.list, "usage", "2026-02-24/", end)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "Index Scan using records_pkey") || !strings.Contains(text, "key >= ") || !strings.Contains(text, "key < ") {
		t.Errorf("List's plan does not read a range of the index:\n%s", text)
	}
}

// translate turns the driver's errors into the store's sentinels, keeping
// the driver's error for errors.As.
func TestTranslate(t *testing.T) {
	s := &Store{schema: "public", server: "db.example:5432"}
	connectErr := fmt.Errorf("dial: %w", syscall.ECONNREFUSED)
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"unique violation", &pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint"}, conversation.ErrConflict},
		{"read-only session", &pgconn.PgError{Code: "25006", Message: "cannot execute UPDATE in a read-only transaction"}, conversation.ErrReadOnly},
		{"tables dropped", &pgconn.PgError{Code: "42P01", Message: `relation "public.records" does not exist`}, ErrNoSchema},
		{"connection refused", connectErr, ErrUnreachable},
		{"connection lost", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), ErrUnreachable},
	}
	for _, tt := range tests {
		got := s.translate(tt.err)
		if !errors.Is(got, tt.want) || !errors.Is(got, tt.err) {
			t.Errorf("%s: translate = %v, want an error wrapping %v and the driver's", tt.name, got, tt.want)
		}
		if again := s.translate(got); again != got {
			t.Errorf("%s: translating twice changed %v to %v", tt.name, got, again)
		}
	}
	if got := s.translate(connectErr).Error(); !strings.Contains(got, "db.example:5432") {
		t.Errorf("an unreachable server's error does not name it: %s", got)
	}
	for _, err := range []error{
		&pgconn.PgError{Code: "28P01", Message: "password authentication failed for user \"mombot\""},
		context.DeadlineExceeded,
		context.Canceled,
	} {
		if got := s.translate(err); got != err {
			t.Errorf("translate(%v) = %v, want it as it is", err, got)
		}
	}
}
