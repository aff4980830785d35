package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
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

// releaseTimeout bounds the release of a lock, which runs even when the
// holder's context has ended.
const releaseTimeout = 5 * time.Second

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
	pool *pgxpool.Pool
	ttl  time.Duration
	log  *slog.Logger

	take, renewSQL, release string
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
	l := &Locker{pool: pool, ttl: o.TTL, log: o.Logger}
	locks := tables{o.Schema}.name("sender_locks")
	lease := `now() + make_interval(secs => $3)`
	l.take = `INSERT INTO ` + locks + ` AS l (sender, token, expires_at) VALUES ($1, $2, ` + lease + `)
		ON CONFLICT (sender) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
		WHERE l.expires_at <= now()`
	l.renewSQL = `UPDATE ` + locks + ` SET expires_at = ` + lease + ` WHERE sender = $1 AND token = $2`
	l.release = `DELETE FROM ` + locks + ` WHERE sender = $1 AND token = $2`
	return l, nil
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
// with ctx.
func (l *Locker) Lock(ctx context.Context, key string) (held context.Context, unlock func(), err error) {
	token := rand.Text()
	secs := l.ttl.Seconds()
	wait := lockWaitMin
	var taken time.Time
	for {
		taken = time.Now() // the lease lasts a TTL from no earlier than this
		tag, err := l.pool.Exec(ctx, l.take, key, token, secs)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = ctxErr
			}
			return nil, nil, fmt.Errorf("postgres: lock: %w", err)
		}
		if tag.RowsAffected() == 1 {
			break
		}
		t := time.NewTimer(wait/2 + mrand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("postgres: lock: %w", ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, lockWaitMax)
	}

	held, lose := context.WithCancelCause(context.Background())
	renewCtx, stop := context.WithCancel(context.Background())
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		l.renew(renewCtx, key, token, taken.Add(l.ttl), lose)
	}()
	var once sync.Once
	return held, func() {
		once.Do(func() {
			stop()
			<-renewed
			lose(nil)
			ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
			defer cancel()
			if _, err := l.pool.Exec(ctx, l.release, key, token); err != nil {
				// The lease runs out on its own after the TTL.
				l.log.Warn("postgres: release of a lock failed", "err", err)
			}
		})
	}, nil
}

// renew extends the lease every TTL/3 until ctx is done or the lock is
// lost, in which case it calls lose with ErrLockLost. The lock is known to
// hold until expires, which each renewal moves on.
func (l *Locker) renew(ctx context.Context, key, token string, expires time.Time, lose context.CancelCauseFunc) {
	every := l.ttl / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// A renewal that hangs gives up halfway to the next tick, so
		// that after two failed ones the holder still learns of the loss
		// a sixth of the TTL before the lease may run out.
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, every/2)
		tag, err := l.pool.Exec(rctx, l.renewSQL, key, token, l.ttl.Seconds())
		cancel()
		switch {
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return // released meanwhile
		case err != nil && time.Until(expires) <= every:
			lose(ErrLockLost)
			l.log.Error("postgres: a lock could not be renewed before its lease runs out; its holder is told it lost it", "err", err)
			return
		case err != nil:
			l.log.Warn("postgres: renewal of a lock failed", "err", err)
		case tag.RowsAffected() == 0:
			lose(ErrLockLost)
			l.log.Error("postgres: a lock's lease ran out while held and passed to another holder; its holder is told it lost it")
			return
		default:
			expires = sent.Add(l.ttl)
		}
	}
}
