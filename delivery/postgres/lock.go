package postgres

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mombot/mombot/delivery"
)

// DefaultLockTTL is how long a lock outlives a holder that stopped renewing
// it when [LockerOptions].TTL is zero.
const DefaultLockTTL = 30 * time.Second

// minLockTTL is the shortest lock TTL accepted: the holder renews three
// times per TTL, each renewal a round trip.
const minLockTTL = 100 * time.Millisecond

// Waits between attempts to take a held lock: from lockWaitMin, doubling up
// to lockWaitMax, each shortened by a random part so that waiters spread out.
const (
	lockWaitMin = 5 * time.Millisecond
	lockWaitMax = 200 * time.Millisecond
)

// LockerOptions configure [NewLocker]. The zero value means the defaults.
type LockerOptions struct {
	// Schema holds the tables, as in [InboxOptions]; "" means
	// DefaultSchema.
	Schema string
	// TTL is how long a lock stays taken after its holder stopped renewing
	// it, for instance because its process died; 0 means DefaultLockTTL.
	// It must be at least 100ms. A holder renews its lock every TTL/3.
	TTL time.Duration
	// Logger reports lost locks and failed renewals; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Locker is a [delivery.Locker] whose locks hold across every process
// sharing the database: one per sender, so that the replicas of the
// service handle one person's messages one at a time. It is safe for
// concurrent use. See the package doc for how a lock is kept.
//
// A holder cut off from the database for about a TTL may lose its lock to
// another: Lock returns a context that tells it so, which the holder
// checks before each step it must take alone.
type Locker struct {
	lease delivery.Lease
}

var _ delivery.Locker = (*Locker)(nil)

// NewLocker returns a Locker on pool, setting up its table in the schema
// if need be. It fails if opts holds a TTL below 100ms other than 0.
func NewLocker(ctx context.Context, pool *pgxpool.Pool, opts *LockerOptions) (*Locker, error) {
	var o LockerOptions
	if opts != nil {
		o = *opts
	}
	if o.TTL == 0 {
		o.TTL = DefaultLockTTL
	}
	if o.TTL < minLockTTL {
		return nil, fmt.Errorf("postgres: locker: TTL must be at least %v, got %v", minLockTTL, o.TTL)
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := migrate(ctx, pool, o.Schema); err != nil {
		return nil, fmt.Errorf("postgres: locker: set up the tables in schema %s: %w", o.Schema, err)
	}
	locks := tables{o.Schema}.name("sender_locks")
	lease := `now() + make_interval(secs => $3)`
	take := `INSERT INTO ` + locks + ` AS l (sender, token, expires_at) VALUES ($1, $2, ` + lease + `)
		ON CONFLICT (sender) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
		WHERE l.expires_at <= now()`
	renew := `UPDATE ` + locks + ` SET expires_at = ` + lease + ` WHERE sender = $1 AND token = $2`
	release := `DELETE FROM ` + locks + ` WHERE sender = $1 AND token = $2`
	secs := o.TTL.Seconds()
	// exec runs one of the statements and reports whether it changed a row.
	exec := func(ctx context.Context, sql string, args ...any) (bool, error) {
		tag, err := pool.Exec(ctx, sql, args...)
		return err == nil && tag.RowsAffected() == 1, err
	}
	return &Locker{lease: delivery.Lease{
		Name: "postgres", TTL: o.TTL, WaitMin: lockWaitMin, WaitMax: lockWaitMax, Log: o.Logger,
		Take: func(ctx context.Context, key, token string) (bool, error) {
			return exec(ctx, take, key, token, secs)
		},
		Renew: func(ctx context.Context, key, token string) (bool, error) {
			return exec(ctx, renew, key, token, secs)
		},
		Release: func(ctx context.Context, key, token string) error {
			_, err := exec(ctx, release, key, token)
			return err
		},
	}}, nil
}

// ErrLockLost is [delivery.ErrLockLost], the cause (see [context.Cause])
// of the end of the context [Locker.Lock] returns when the lock was lost
// while held.
var ErrLockLost = delivery.ErrLockLost

// Lock takes the lock on key, waiting while another holds it until ctx is
// done. It returns a func that releases the lock; calling it more than once
// is harmless. It fails, taking nothing, when ctx ends first (the error
// wraps ctx.Err()) or when the database fails.
//
// The lock is renewed in the background until released. held is done once
// the lock is no longer held: at unlock, or, with the cause ErrLockLost,
// when a renewal finds the lock taken by another, or when the renewals
// have failed for so long that the lease may run out before the next one
// (about two thirds of the TTL). The loss is logged. held does not end
// with ctx. See [delivery.Lease].
func (l *Locker) Lock(ctx context.Context, key string) (held context.Context, unlock func(), err error) {
	return l.lease.Lock(ctx, key, rand.Text())
}
