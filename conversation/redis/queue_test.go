package redis_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation/redis"
)

func newQueue(t *testing.T, prefix string) *redis.Queue {
	t.Helper()
	q, err := open(t, prefix, nil).Queue(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func peekQueue(t *testing.T, q *redis.Queue, key string) string {
	t.Helper()
	item, ok, err := q.Peek(context.Background(), key)
	if err != nil {
		t.Fatalf("Peek(%s): %v", key, err)
	}
	if !ok {
		return ""
	}
	return string(item)
}

// TestQueue pushes from two clients, as two replicas would, and drains
// from both, each peeking and acking under a lock: every item once, in the
// order pushed, and the list expires.
func TestQueue(t *testing.T) {
	prefix := newPrefix(t)
	ctx := context.Background()
	q1, q2 := newQueue(t, prefix), newQueue(t, prefix)
	const key = "+14155551234"
	if got := peekQueue(t, q1, key); got != "" {
		t.Fatalf("Peek of an empty queue: %q", got)
	}
	for i := range 6 {
		q := q1
		if i%2 == 1 {
			q = q2
		}
		if err := q.Push(ctx, key, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if ttl, _ := rawClient(t).PTTL(ctx, prefix+"queue:"+key).Result(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("TTL of a queue = %v, want an hour", ttl)
	}
	var mu sync.Mutex // the lock a drain holds
	var got []string
	var wg sync.WaitGroup
	for _, q := range []*redis.Queue{q1, q2} {
		wg.Go(func() {
			for {
				mu.Lock()
				item := peekQueue(t, q, key)
				if item != "" {
					got = append(got, item)
					if err := q.Ack(ctx, key, []byte(item)); err != nil {
						t.Error(err)
					}
				}
				mu.Unlock()
				if item == "" {
					return
				}
			}
		})
	}
	wg.Wait()
	if want := []string{"m0", "m1", "m2", "m3", "m4", "m5"}; !slices.Equal(got, want) {
		t.Fatalf("drained %q, want %q", got, want)
	}
	if n, _ := rawClient(t).Exists(ctx, prefix+"queue:"+key).Result(); n != 0 {
		t.Fatal("an empty queue is still a key")
	}
	if _, err := open(t, prefix, nil).Queue(0); err == nil {
		t.Fatal("a queue with a zero TTL, want an error")
	}
}

// TestQueueAck: Peek leaves the head; Ack removes it only when it is still
// the item acked.
func TestQueueAck(t *testing.T) {
	prefix := newPrefix(t)
	ctx := context.Background()
	q := newQueue(t, prefix)
	for _, item := range []string{"a", "b", "a"} {
		if err := q.Push(ctx, "k", []byte(item)); err != nil {
			t.Fatal(err)
		}
	}
	if peekQueue(t, q, "k") != "a" || peekQueue(t, q, "k") != "a" {
		t.Fatal("Peek does not keep the head")
	}
	steps := []struct {
		ack, head string
	}{
		{"b", "a"}, // not the head: nothing
		{"a", "b"},
		{"a", "b"}, // repeated: nothing else
		{"b", "a"}, // the second copy of a is now the head
		{"a", ""},
		{"a", ""}, // empty queue: nothing
	}
	for _, s := range steps {
		if err := q.Ack(ctx, "k", []byte(s.ack)); err != nil {
			t.Fatalf("Ack(%s): %v", s.ack, err)
		}
		if got := peekQueue(t, q, "k"); got != s.head {
			t.Fatalf("after Ack(%s) the head is %q, want %q", s.ack, got, s.head)
		}
	}
}

// TestQueueKeys: the keys with queued items, under this prefix only; a
// prefix with glob characters matches itself only.
func TestQueueKeys(t *testing.T) {
	base := newPrefix(t)
	ctx := context.Background()
	q := newQueue(t, base+"[x]*:")
	other := newQueue(t, base+"ax*:")
	if ks, err := q.Keys(ctx); err != nil || len(ks) != 0 {
		t.Fatalf("Keys of no queue: %q, %v", ks, err)
	}
	for _, k := range []string{"+1", "+2", "+3"} {
		if err := q.Push(ctx, k, []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Push(ctx, "+9", []byte("m")); err != nil {
		t.Fatal(err)
	}
	if err := q.Ack(ctx, "+2", []byte("m")); err != nil {
		t.Fatal(err)
	}
	ks, err := q.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ks)
	if want := []string{"+1", "+3"}; !slices.Equal(ks, want) {
		t.Fatalf("Keys = %q, want %q", ks, want)
	}
}
