package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Queue is a first-in, first-out queue per key, shared by every process on
// the Redis: the webhook server puts each sender's messages in it so that
// whichever replica handles them takes them in the order they arrived. It
// is safe for concurrent use.
//
// A queue is a list <prefix>queue:<key>; Push appends with RPUSH and
// renews the list's TTL in the same transaction, Pop takes the head with
// LPOP, so each item is popped once. A queue nobody pops expires with its
// TTL.
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

// Push appends item to key's queue.
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

// Pop removes and returns the first item of key's queue; ok is false when
// the queue is empty.
func (q *Queue) Pop(ctx context.Context, key string) (item []byte, ok bool, err error) {
	item, err = q.rdb.LPop(ctx, q.prefix+key).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redis: queue pop: %w", err)
	}
	return item, true, nil
}
