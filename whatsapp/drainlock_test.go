package whatsapp_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
)

// stuckLocker is a Locker whose Lock fails at once while failing is set,
// and otherwise waits until ctx ends while busy is set (another replica
// holds every lock), counting the calls.
type stuckLocker struct {
	mu      sync.Mutex
	failing bool
	busy    bool
	calls   int
	km      delivery.Local
}

var errLockerDown = errors.New("stuckLocker: down")

func (l *stuckLocker) Lock(ctx context.Context, key string) (context.Context, func(), error) {
	l.mu.Lock()
	l.calls++
	failing, busy := l.failing, l.busy
	l.mu.Unlock()
	switch {
	case failing:
		return nil, nil, errLockerDown
	case busy:
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	return l.km.Lock(ctx, key)
}

func (l *stuckLocker) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// TestLockFailedLeavesTheSharedQueue: while the Locker fails, a drain does
// not answer from the shared queue, which another replica may be
// answering; once the Locker works the message is answered, once.
func TestLockFailedLeavesTheSharedQueue(t *testing.T) {
	q := &memQueue{}
	locker := &stuckLocker{failing: true}
	h := newHarness(t, func(c *setup) {
		c.Inbox, c.Locker = q, locker
		c.ResumeEvery = 5 * time.Millisecond
	})
	if code := h.post(text(sheenaWaID, "wamid.nolock", "hello")); code != http.StatusOK {
		t.Fatalf("delivery: %d", code)
	}
	waitFor(t, "several drains", func() bool { return locker.count() >= 4 })
	if n := h.graph.Attempts(); n != 0 {
		t.Fatalf("answered from the shared queue without the lock: %q", h.bodies())
	}
	if n := q.len(); n != 1 {
		t.Fatalf("%d messages queued, want 1", n)
	}
	if !strings.Contains(h.logs.String(), "sender lock failed") {
		t.Error("the failure was not logged")
	}
	locker.mu.Lock()
	locker.failing = false
	locker.mu.Unlock()
	waitFor(t, "the message to leave the queue", func() bool { return q.len() == 0 })
	h.shutdown()
	if got := h.bodies(); !slices.Equal(got, []string{"echo: hello"}) {
		t.Errorf("sent %q", got)
	}
}

// TestShutdownDoesNotWaitForAnotherHoldersLock: a drain waiting for a lock
// another replica holds gives up once the shutdown has begun, leaving the
// queued message to that replica.
func TestShutdownDoesNotWaitForAnotherHoldersLock(t *testing.T) {
	q := &memQueue{}
	locker := &stuckLocker{busy: true}
	h := newHarness(t, func(c *setup) {
		c.Inbox, c.Locker = q, locker
		c.ShutdownLockWait = 10 * time.Millisecond
	})
	h.post(text(sheenaWaID, "wamid.elsewhere", "hello"))
	waitFor(t, "the drain to wait for the lock", func() bool { return locker.count() >= 1 })
	// A bound in case the shutdown waits for the lock, which is the bug.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v, want nil: the message is left to the lock's holder", err)
	}
	h.shut = true
	if n := q.len(); n != 1 {
		t.Errorf("%d messages queued, want 1 left to the other holder", n)
	}
	if n := h.graph.Attempts(); n != 0 {
		t.Errorf("answered without the lock")
	}
	if !strings.Contains(h.logs.String(), "left to it") {
		t.Error("giving up the lock wait was not logged")
	}
}
