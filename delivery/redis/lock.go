package redis

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
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
	prefix string
	lease  delivery.Lease
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
	ttl := o.TTL
	return &Locker{prefix: o.Prefix + "lock:", lease: delivery.Lease{
		Name: "redis", TTL: ttl, WaitMin: lockWaitMin, WaitMax: lockWaitMax, Log: o.Logger,
		Take: func(ctx context.Context, key, token string) (bool, error) {
			return rdb.SetNX(ctx, key, token, ttl).Result()
		},
		Renew: func(ctx context.Context, key, token string) (bool, error) {
			n, err := renewScript.Run(ctx, rdb, []string{key}, token, ttl.Milliseconds()).Int()
			return n != 0, err
		},
		Release: func(ctx context.Context, key, token string) error {
			return releaseScript.Run(ctx, rdb, []string{key}, token).Err()
		},
	}}, nil
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
// end with ctx. See [delivery.Lease].
func (l *Locker) Lock(ctx context.Context, key string) (held context.Context, unlock func(), err error) {
	return l.lease.Lock(ctx, l.prefix+key, rand.Text())
}
