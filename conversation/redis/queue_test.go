package redis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestQueue pushes from two clients, as two replicas would, and pops from
// both: every item once, in the order pushed, and the list expires.
func TestQueue(t *testing.T) {
	prefix := newPrefix(t)
	ctx := context.Background()
	q1, err := open(t, prefix, nil).Queue(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	q2, _ := open(t, prefix, nil).Queue(time.Hour)
	if _, ok, err := q1.Pop(ctx, "+14155551234"); ok || err != nil {
		t.Fatalf("Pop of an empty queue: %v, %v", ok, err)
	}
	for i := range 6 {
		q := q1
		if i%2 == 1 {
			q = q2
		}
		if err := q.Push(ctx, "+14155551234", fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if ttl, _ := rawClient(t).PTTL(ctx, prefix+"queue:+14155551234").Result(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("TTL of a queue = %v, want an hour", ttl)
	}
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	for _, q := range [](interface {
		Pop(context.Context, string) ([]byte, bool, error)
	}){q1, q2} {
		wg.Go(func() {
			for {
				mu.Lock()
				item, ok, err := q.Pop(ctx, "+14155551234")
				if ok {
					got = append(got, string(item))
				}
				mu.Unlock()
				if err != nil {
					t.Error(err)
				}
				if !ok {
					return
				}
			}
		})
	}
	wg.Wait()
	if want := "[m0 m1 m2 m3 m4 m5]"; fmt.Sprint(got) != want {
		t.Fatalf("popped %v, want %s", got, want)
	}
	if _, err := open(t, prefix, nil).Queue(0); err == nil {
		t.Fatal("a queue with a zero TTL, want an error")
	}
}
