package redis

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/mombot/mombot/delivery"
	goredis "github.com/redis/go-redis/v9"
)

// DefaultLockTTL is how long a lock outlives a holder that stopped renewing
// it when [LockerOptions].TTL is zero.
const DefaultLockTTL = 30 * time.Second

// Waits between attempts to take a held lock: from lockWaitMin, doubling up
// to lockWaitMax, each shortened by a random part so that waiters spread out.
const (
	lockWaitMin = 2 * time.Millisecond
	lockWaitMax = 100 * time.Millisecond
)

// minLockTTL is the shortest lock TTL accepted: Redis counts in
// milliseconds, and the holder renews three times per TTL.
const minLockTTL = 10 * time.Millisecond

// releaseTimeout bounds the release of a lock, which runs even when the
// holder's context has ended.
const releaseTimeout = 5 * time.Second

// LockerOptions configure [NewLocker]. The zero value means the defaults.
type LockerOptions struct {
	// Prefix is put in front of the lock keys, after which comes "lock:";
	// the conversation store's (its URL's ?prefix=) keeps every key of a
	// deployment together. "" means "mombot:".
	Prefix string
	// TTL is how long a lock stays taken after its holder stopped renewing
	// it, for instance because its process died; 0 means DefaultLockTTL.
	// It must be at least 10ms.
	// A holder renews its lock every TTL/3 for as long as it holds it.
	TTL time.Duration
	// Logger reports lost locks and failed renewals; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Locker is a [delivery.Locker] whose locks hold across every process
// sharing the Redis: one per sender, so that the replicas of the service
// handle one person's messages one at a time. It is safe for concurrent
// use.
//
// A lock is a key <prefix>lock:<key> holding a random token of its holder,
// set with SET NX PX, renewed while held and deleted on release only if it
// still holds the token, so that a holder never releases a lock that expired
// and was taken by another. Waiters poll; they are not served in order.
//
// A holder cut off from Redis for about a TTL may lose its lock to another:
// Lock returns a context that tells it so, which the holder checks before
// each step it must take alone.
type Locker struct {
	rdb    *goredis.Client
	prefix string
	ttl    time.Duration
	log    *slog.Logger
}

var _ delivery.Locker = (*Locker)(nil)

// NewLocker returns a Locker on rdb. It fails if opts holds a TTL below
// 10ms other than 0.
func NewLocker(rdb *goredis.Client, opts *LockerOptions) (*Locker, error) {
	var o LockerOptions
	if opts != nil {
		o = *opts
	}
	if o.TTL == 0 {
		o.TTL = DefaultLockTTL
	}
	if o.TTL < minLockTTL {
		return nil, fmt.Errorf("redis: locker: TTL must be at least %v, got %v", minLockTTL, o.TTL)
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Locker{rdb: rdb, prefix: o.Prefix + "lock:", ttl: o.TTL, log: o.Logger}, nil
}

// renewScript extends the lock KEYS[1] to ARGV[2] ms if it still holds the
// token ARGV[1]; it returns 0 if it does not.
var renewScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// releaseScript deletes the lock KEYS[1] if it still holds the token ARGV[1].
var releaseScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

// ErrLockLost is [delivery.ErrLockLost], the cause (see [context.Cause])
// of the end of the context [Locker.Lock] returns when the lock was lost
// while held.
var ErrLockLost = delivery.ErrLockLost

// Lock takes the lock on key, waiting while another holds it until ctx is
// done. It returns a func that releases the lock; calling it more than once
// is harmless. It fails, taking nothing, when ctx ends first (the error
// wraps ctx.Err()) or when Redis fails.
//
// The lock is renewed in the background until released. held is done once
// the lock is no longer held: at unlock, or, with the cause ErrLockLost,
// when a renewal finds the lock taken by another or expired, or when the
// renewals have failed for so long that the lock may expire before the
// next one (about two thirds of the TTL). The loss is logged. held does not
// end with ctx.
func (l *Locker) Lock(ctx context.Context, key string) (held context.Context, unlock func(), err error) {
	rkey, token := l.prefix+key, rand.Text()
	wait := lockWaitMin
	var taken time.Time
	for {
		taken = time.Now() // the lock lasts a TTL from no earlier than this
		ok, err := l.rdb.SetNX(ctx, rkey, token, l.ttl).Result()
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = ctxErr
			}
			return nil, nil, fmt.Errorf("redis: lock: %w", err)
		}
		if ok {
			break
		}
		t := time.NewTimer(wait/2 + mrand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("redis: lock: %w", ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, lockWaitMax)
	}

	held, lose := context.WithCancelCause(context.Background())
	renewCtx, stop := context.WithCancel(context.Background())
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		l.renew(renewCtx, rkey, token, taken.Add(l.ttl), lose)
	}()
	var once sync.Once
	return held, func() {
		once.Do(func() {
			stop()
			<-renewed
			lose(nil)
			ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
			defer cancel()
			if err := releaseScript.Run(ctx, l.rdb, []string{rkey}, token).Err(); err != nil {
				// The lock expires on its own after the TTL.
				l.log.Warn("redis: release of a lock failed", "err", err)
			}
		})
	}, nil
}

// renew extends the lock every TTL/3 until ctx is done or the lock is lost,
// in which case it calls lose with ErrLockLost. The lock is known to hold
// until expires, which each renewal moves on.
func (l *Locker) renew(ctx context.Context, rkey, token string, expires time.Time, lose context.CancelCauseFunc) {
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
		// a sixth of the TTL before the lock may expire.
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, every/2)
		n, err := renewScript.Run(rctx, l.rdb, []string{rkey}, token, l.ttl.Milliseconds()).Int()
		cancel()
		switch {
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return // released meanwhile
		case err != nil && time.Until(expires) <= every:
			// The next renewal would come too late to be sure.
			// Tell the holder first: once the loss is logged, it is known.
			lose(ErrLockLost)
			l.log.Error("redis: a lock could not be renewed before it expires; its holder is told it lost it", "err", err)
			return
		case err != nil:
			// Try again at the next tick: the lock holds until expires.
			l.log.Warn("redis: renewal of a lock failed", "err", err)
		case n == 0:
			lose(ErrLockLost)
			l.log.Error("redis: a lock expired while held and may have passed to another holder; its holder is told it lost it")
			return
		default:
			expires = sent.Add(l.ttl)
		}
	}
}
