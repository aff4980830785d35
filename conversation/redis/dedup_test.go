package redis_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDedup(t *testing.T) {
	prefix := newPrefix(t)
	d := open(t, prefix, nil).Dedup()
	ctx := context.Background()
	seen := func(id string, ttl time.Duration) bool {
		t.Helper()
		first, err := d.Seen(ctx, id, ttl)
		if err != nil {
			t.Fatalf("Seen(%q): %v", id, err)
		}
		return first
	}
	has := func(id string) bool {
		t.Helper()
		ok, err := d.Has(ctx, id)
		if err != nil {
			t.Fatalf("Has(%q): %v", id, err)
		}
		return ok
	}
	if has("wamid.1") {
		t.Fatal("Has of an id never recorded")
	}
	if !seen("wamid.1", time.Hour) {
		t.Fatal("the first Seen of an id is not a first time")
	}
	if !has("wamid.1") || has("wamid.2") {
		t.Fatal("Has does not tell the recorded id from another")
	}
	if seen("wamid.1", time.Hour) {
		t.Fatal("the second Seen of an id is a first time")
	}
	if !seen("wamid.2", time.Hour) {
		t.Fatal("another id is not a first time")
	}
	if ttl, _ := rawClient(t).PTTL(ctx, prefix+"seen:wamid.1").Result(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("TTL of a seen id = %v, want an hour", ttl)
	}
	if err := d.Forget(ctx, "wamid.1"); err != nil {
		t.Fatal(err)
	}
	if !seen("wamid.1", time.Hour) {
		t.Fatal("an id forgotten is not a first time")
	}

	if !seen("wamid.short", 50*time.Millisecond) {
		t.Fatal("first Seen of wamid.short")
	}
	time.Sleep(150 * time.Millisecond)
	if has("wamid.short") {
		t.Fatal("Has of an id after its TTL")
	}
	if !seen("wamid.short", 50*time.Millisecond) {
		t.Fatal("an id is still seen after its TTL")
	}

	if _, err := d.Seen(ctx, "wamid.3", 0); err == nil {
		t.Fatal("Seen with a zero TTL succeeded, want an error")
	}
}

// TestDedupAcrossClients delivers one id to many goroutines of two
// processes' clients: exactly one is first.
func TestDedupAcrossClients(t *testing.T) {
	prefix := newPrefix(t)
	dedups := [2]interface {
		Seen(context.Context, string, time.Duration) (bool, error)
	}{open(t, prefix, nil).Dedup(), open(t, prefix, nil).Dedup()}
	for _, id := range []string{"wamid.a", "wamid.b", "wamid.c"} {
		var firsts atomic.Int32
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				first, err := dedups[i%2].Seen(context.Background(), id, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if first {
					firsts.Add(1)
				}
			})
		}
		wg.Wait()
		if n := firsts.Load(); n != 1 {
			t.Fatalf("%s: %d first times, want 1", id, n)
		}
	}
}
