package deliverytest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
)

// RunLocker runs the cases every shared delivery.Locker must pass (the
// Redis and PostgreSQL ones), with two Lockers from open on one store, as
// two replicas hold them; the cases of leases run out and lost are the
// stores' own.
func RunLocker(t *testing.T, open func(t *testing.T) (a, b delivery.Locker)) {
	t.Run("Excludes", func(t *testing.T) { lockExcludes(t, open) })
	t.Run("WaitsForContext", func(t *testing.T) { lockWaitsForContext(t, open) })
}

// lockExcludes takes one key's lock from many goroutines of two Lockers:
// never two holders at once.
func lockExcludes(t *testing.T, open func(t *testing.T) (a, b delivery.Locker)) {
	a, b := open(t)
	lockers := []delivery.Locker{a, b}
	const goroutines, each = 8, 10
	var mu sync.Mutex // guards inside and entered, the test's own bookkeeping
	inside, entered := 0, 0
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			l := lockers[i%2]
			for range each {
				_, unlock, err := l.Lock(context.Background(), "+14155551234")
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
	if entered != goroutines*each {
		t.Fatalf("%d critical sections, want %d", entered, goroutines*each)
	}
}

// lockWaitsForContext: a held key's Lock waits until its ctx ends, other
// keys are free, and a released lock is free at once; unlock twice is
// harmless.
func lockWaitsForContext(t *testing.T, open func(t *testing.T) (a, b delivery.Locker)) {
	l, _ := open(t)
	_, unlock, err := l.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := l.Lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held key: err = %v, want DeadlineExceeded", err)
	}
	_, ub, err := l.Lock(context.Background(), "b")
	if err != nil {
		t.Fatalf("Lock of another key: %v", err)
	}
	ub()
	unlock()
	unlock()
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, again, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()
}
