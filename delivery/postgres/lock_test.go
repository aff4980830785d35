package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
	"github.com/mombot/mombot/delivery/postgres"
	"github.com/mombot/mombot/internal/logtest"
	"github.com/mombot/mombot/internal/pgtest"
)

func lockHeld(t *testing.T, l *postgres.Locker, key string) (context.Context, func()) {
	t.Helper()
	held, unlock, err := l.Lock(context.Background(), key)
	if err != nil {
		t.Fatalf("Lock(%q): %v", key, err)
	}
	return held, unlock
}

// TestLocker runs delivery's locker suite on two Lockers in one schema,
// each on a pool of its own, as two replicas hold them.
func TestLocker(t *testing.T) {
	deliverytest.RunLocker(t, func(t *testing.T) (a, b delivery.Locker) {
		schema := pgtest.Name(t)
		return newLocker(t, schema, nil), newLocker(t, schema, nil)
	})
}

// TestLockRenewed holds a lock for several TTLs: renewal keeps others out.
func TestLockRenewed(t *testing.T) {
	schema := pgtest.Name(t)
	l := newLocker(t, schema, &postgres.LockerOptions{TTL: 300 * time.Millisecond})
	held, unlock := lockHeld(t, l, "a")
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	if _, _, err := newLocker(t, schema, nil).Lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a lock held for four TTLs was taken by another: err = %v", err)
	}
	if held.Err() != nil {
		t.Fatalf("a lock renewed in time is reported lost: %v", context.Cause(held))
	}
	unlock()
	if held.Err() == nil {
		t.Fatal("held is not done after unlock")
	}
	if errors.Is(context.Cause(held), postgres.ErrLockLost) {
		t.Fatal("a lock released is reported lost")
	}
	var n int
	if err := pgtest.Conn(t).QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{schema, "sender_locks"}.Sanitize()).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d lock rows after unlock (%v), want none", n, err)
	}
}

// TestLockOfDeadHolderPasses takes a lock left by a replica that died
// holding it: the next holder gets it once the lease has run out.
func TestLockOfDeadHolderPasses(t *testing.T) {
	schema := pgtest.Name(t)
	l := newLocker(t, schema, nil)
	if _, err := pgtest.Conn(t).Exec(context.Background(), `INSERT INTO `+pgx.Identifier{schema, "sender_locks"}.Sanitize()+
		` (sender, token, expires_at) VALUES ('a', 'dead-replica', now() + interval '300 milliseconds')`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := l.Lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a lease not run out yet was taken: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, unlock, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatalf("the dead holder's lock did not pass: %v", err)
	}
	unlock()
}

// TestLockLostToAnother: a holder whose lease ran out and was taken by
// another (it was paused, or cut off, for longer than the TTL) is told it
// lost the lock, and its unlock leaves the new holder's lock alone.
func TestLockLostToAnother(t *testing.T) {
	schema := pgtest.Name(t)
	var logs logtest.Buffer
	l := newLocker(t, schema, &postgres.LockerOptions{TTL: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	held, unlock := lockHeld(t, l, "a")
	conn := pgtest.Conn(t)
	locks := pgx.Identifier{schema, "sender_locks"}.Sanitize()
	if _, err := conn.Exec(context.Background(), `UPDATE `+locks+` SET token = 'other', expires_at = now() + interval '1 minute' WHERE sender = 'a'`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder was not told it lost the lock")
	}
	if cause := context.Cause(held); !errors.Is(cause, postgres.ErrLockLost) {
		t.Errorf("held ended with %v, want ErrLockLost", cause)
	}
	unlock()
	var token string
	if err := conn.QueryRow(context.Background(), `SELECT token FROM `+locks+` WHERE sender = 'a'`).Scan(&token); err != nil || token != "other" {
		t.Fatalf("lock holds %q (%v) after the old holder's unlock, want \"other\"", token, err)
	}
	if !strings.Contains(logs.String(), "passed to another holder") {
		t.Errorf("log = %q, want the loss reported", logs.String())
	}
}

func TestLockerOptions(t *testing.T) {
	pool := newPool(t)
	for _, ttl := range []time.Duration{-time.Second, time.Millisecond} {
		if _, err := postgres.NewLocker(context.Background(), pool, &postgres.LockerOptions{TTL: ttl, Schema: pgtest.Name(t)}); err == nil {
			t.Errorf("Locker with TTL %v succeeded, want an error", ttl)
		}
	}
}
