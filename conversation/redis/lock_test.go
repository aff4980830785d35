package redis_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation/redis"
)

func newLocker(t *testing.T, s *redis.Store, opts *redis.LockerOptions) *redis.Locker {
	t.Helper()
	l, err := s.Locker(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func lock(t *testing.T, l *redis.Locker, key string) func() {
	t.Helper()
	unlock, err := l.Lock(context.Background(), key)
	if err != nil {
		t.Fatalf("Lock(%q): %v", key, err)
	}
	return unlock
}

// TestLockExcludes takes one key's lock from many goroutines of two
// lockers on two connections, as two replicas would: never two at once.
func TestLockExcludes(t *testing.T) {
	prefix := newPrefix(t)
	lockers := []*redis.Locker{newLocker(t, open(t, prefix, nil), nil), newLocker(t, open(t, prefix, nil), nil)}
	var mu sync.Mutex // guards inside and the test's own bookkeeping only
	inside, entered := 0, 0
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			l := lockers[i%2]
			for range 10 {
				unlock, err := l.Lock(context.Background(), "+14155551234")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				entered++
				overlap := inside > 1
				mu.Unlock()
				if overlap {
					t.Error("two holders of one lock at once")
				}
				time.Sleep(time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				unlock()
			}
		})
	}
	wg.Wait()
	if entered != 80 {
		t.Fatalf("%d critical sections, want 80", entered)
	}
}

func TestLockWaitsForContext(t *testing.T) {
	l := newLocker(t, open(t, newPrefix(t), nil), nil)
	unlock := lock(t, l, "a")
	defer unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := l.Lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held key: err = %v, want DeadlineExceeded", err)
	}
	// Other keys are free.
	lock(t, l, "b")()

	// A released lock is free at once, and unlock twice is harmless.
	unlock()
	unlock()
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	again, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()
}

// TestLockRenewed holds a lock for several TTLs: renewal keeps others out.
func TestLockRenewed(t *testing.T) {
	prefix := newPrefix(t)
	l := newLocker(t, open(t, prefix, nil), &redis.LockerOptions{TTL: 300 * time.Millisecond})
	unlock := lock(t, l, "a")
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	if _, err := l.Lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a lock held for four TTLs was taken by another: err = %v", err)
	}
	unlock()
	if n, _ := rawClient(t).Exists(context.Background(), prefix+"lock:a").Result(); n != 0 {
		t.Fatal("the lock key is still there after unlock")
	}
}

// TestLockOfDeadHolderExpires takes a lock left by a holder that died.
func TestLockOfDeadHolderExpires(t *testing.T) {
	prefix := newPrefix(t)
	l := newLocker(t, open(t, prefix, nil), nil)
	if err := rawClient(t).Set(context.Background(), prefix+"lock:a", "dead-replica", 200*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	unlock, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatalf("the lock of a dead holder was never freed: %v", err)
	}
	unlock()
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Fatalf("took a held lock after %v", waited)
	}
}

// TestUnlockKeepsAnothersLock: a holder whose lock expired and passed to
// another does not release the other's lock, and the loss is logged.
func TestUnlockKeepsAnothersLock(t *testing.T) {
	prefix := newPrefix(t)
	var logs syncBuffer
	s := open(t, prefix, &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	l := newLocker(t, s, &redis.LockerOptions{TTL: 60 * time.Millisecond})
	rdb := rawClient(t)
	ctx := context.Background()
	unlock := lock(t, l, "a")
	if err := rdb.Set(ctx, prefix+"lock:a", "other", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// A renewal, every 20ms, finds the lock gone.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "lock expired while held"); {
		if time.Now().After(deadline) {
			t.Fatalf("log = %q, want the lost lock reported", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	unlock()
	if got, _ := rdb.Get(ctx, prefix+"lock:a").Result(); got != "other" {
		t.Fatalf("lock holds %q after the old holder's unlock, want \"other\"", got)
	}
}

// syncBuffer is a bytes.Buffer that a logger may write while a test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLockerOptions(t *testing.T) {
	s := open(t, newPrefix(t), nil)
	for _, ttl := range []time.Duration{-time.Second, time.Millisecond} {
		if _, err := s.Locker(&redis.LockerOptions{TTL: ttl}); err == nil {
			t.Errorf("Locker with TTL %v succeeded, want an error", ttl)
		}
	}
}
