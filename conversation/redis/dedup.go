package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Dedup remembers ids, such as those of webhook deliveries, across every
// process sharing the Redis, so that a message delivered twice, to the same
// replica or to two, is handled once. It is safe for concurrent use.
//
// An id is a key <prefix>seen:<id> set with SET NX and a TTL.
type Dedup struct {
	rdb    *goredis.Client
	prefix string
}

// Dedup returns a Dedup on s's Redis and key prefix.
func (s *Store) Dedup() *Dedup {
	return &Dedup{rdb: s.rdb, prefix: s.prefix + "seen:"}
}

// Seen records id for ttl and reports whether this is the first time it is
// recorded: true for exactly one of any number of concurrent calls with the
// same id, from any process, until the ttl has passed. On error nothing is
// known; a caller that must not drop a message handles it anyway. ttl must
// be positive.
func (d *Dedup) Seen(ctx context.Context, id string, ttl time.Duration) (firstTime bool, err error) {
	if ttl <= 0 {
		return false, fmt.Errorf("redis: seen: ttl must be positive, got %v", ttl)
	}
	first, err := d.rdb.SetNX(ctx, d.prefix+id, 1, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("redis: seen: %w", err)
	}
	return first, nil
}

// Has reports whether id is recorded, by [Dedup.Seen], and its ttl has not
// passed. With Seen it makes a check and a record in two steps, for a
// caller that must record an id only once it has handled it.
func (d *Dedup) Has(ctx context.Context, id string) (bool, error) {
	n, err := d.rdb.Exists(ctx, d.prefix+id).Result()
	if err != nil {
		return false, fmt.Errorf("redis: seen: %w", err)
	}
	return n > 0, nil
}

// Forget removes id, so that the next [Dedup.Seen] of it is a first time
// again: for a message whose handling failed and that should be handled
// when it is delivered again.
func (d *Dedup) Forget(ctx context.Context, id string) error {
	if err := d.rdb.Del(ctx, d.prefix+id).Err(); err != nil {
		return fmt.Errorf("redis: forget: %w", err)
	}
	return nil
}
