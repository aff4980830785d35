package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Queue is a durable first-in, first-out queue per key, shared by every
// process on the Redis: the webhook server keeps each sender's messages in
// it from their delivery until they are answered, so that whichever
// replica handles them takes them in the order they arrived, and a replica
// that dies while answering leaves them to another. It is safe for
// concurrent use.
//
// A queue is a list <prefix>queue:<key>. Push appends with RPUSH and
// renews the list's TTL in the same transaction; Peek reads the head with
// LINDEX; Ack removes the head with LPOP, in a script that first checks the
// head is still the item acked. A queue nobody drains expires with its TTL.
// Only the holder of the key's lock (see delivery/redis) should Peek and Ack.
type Queue struct {
	rdb    *goredis.Client
	prefix string
	ttl    time.Duration
}

// Queue returns a Queue on s's Redis and key prefix whose lists expire ttl
// after their last push. ttl must be positive.
func (s *Store) Queue(ttl time.Duration) (*Queue, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("redis: queue: ttl must be positive, got %v", ttl)
	}
	return &Queue{rdb: s.rdb, prefix: s.prefix + "queue:", ttl: ttl}, nil
}

// Push appends item to key's queue. Once it returns nil the item is in
// Redis, as durable as Redis's persistence makes it.
func (q *Queue) Push(ctx context.Context, key string, item []byte) error {
	_, err := q.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.RPush(ctx, q.prefix+key, item)
		p.PExpire(ctx, q.prefix+key, q.ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: queue push: %w", err)
	}
	return nil
}

// Peek returns the first item of key's queue without removing it; ok is
// false when the queue is empty.
func (q *Queue) Peek(ctx context.Context, key string) (item []byte, ok bool, err error) {
	item, err = q.rdb.LIndex(ctx, q.prefix+key, 0).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redis: queue peek: %w", err)
	}
	return item, true, nil
}

// ackScript pops the head of the list KEYS[1] if it equals ARGV[1], and
// returns 1 if it did.
var ackScript = goredis.NewScript(`
if redis.call('LINDEX', KEYS[1], 0) == ARGV[1] then
	redis.call('LPOP', KEYS[1])
	return 1
end
return 0
`)

// Ack removes the first item of key's queue if it is item, and does nothing
// otherwise: a repeated Ack, or one from a holder whose lock passed to
// another meanwhile, removes nothing but that item or an equal copy.
func (q *Queue) Ack(ctx context.Context, key string, item []byte) error {
	if err := ackScript.Run(ctx, q.rdb, []string{q.prefix + key}, item).Err(); err != nil {
		return fmt.Errorf("redis: queue ack: %w", err)
	}
	return nil
}

// Keys returns the keys whose queue holds items, found with SCAN, so it
// does not block Redis however many keys it holds.
func (q *Queue) Keys(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var keys []string
	iter := q.rdb.Scan(ctx, 0, globEscape(q.prefix)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		// SCAN may return a key more than once.
		if k := strings.TrimPrefix(iter.Val(), q.prefix); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("redis: queue keys: %w", err)
	}
	return keys, nil
}
