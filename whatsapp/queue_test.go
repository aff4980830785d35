package whatsapp_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp"
)

// memQueue is a Queue in memory, shared by the Servers of a test as a
// Redis queue is by replicas. Push fails while failing is set.
type memQueue struct {
	mu      sync.Mutex
	items   map[string][][]byte
	failing bool
}

func (q *memQueue) Push(_ context.Context, key string, item []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing {
		return errors.New("memQueue: down")
	}
	if q.items == nil {
		q.items = map[string][][]byte{}
	}
	q.items[key] = append(q.items[key], item)
	return nil
}

func (q *memQueue) Pop(_ context.Context, key string) ([]byte, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items[key]) == 0 {
		return nil, false, nil
	}
	item := q.items[key][0]
	q.items[key] = q.items[key][1:]
	return item, true, nil
}

// pollLocker is a Locker whose waiters poll at random intervals, as those
// of the Redis locker do, so they are not served in the order they came.
type pollLocker struct {
	mu   sync.Mutex
	held map[string]bool
}

func (l *pollLocker) Lock(ctx context.Context, key string) (func(), error) {
	for {
		l.mu.Lock()
		if l.held == nil {
			l.held = map[string]bool{}
		}
		if !l.held[key] {
			l.held[key] = true
			l.mu.Unlock()
			return func() { l.mu.Lock(); delete(l.held, key); l.mu.Unlock() }, nil
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(rand.IntN(3000)) * time.Microsecond):
		}
	}
}

// TestSharedQueueKeepsOrderAcrossServers delivers one sender's messages to
// two Servers in turn, as a load balancer may, while the first is being
// answered: with a shared Queue they are answered in the order delivered.
func TestSharedQueueKeepsOrderAcrossServers(t *testing.T) {
	q := &memQueue{}
	locker := &pollLocker{}
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	rec := &recorder{respond: func(ctx context.Context, in whatsapp.Inbound) (string, error) {
		if in.Text == "m1" {
			started <- struct{}{}
			<-release
		}
		return "echo: " + in.Text, nil
	}}
	shared := func(c *whatsapp.Config) { c.Queue, c.Locker, c.Responder = q, locker, rec }
	servers := []*harness{newHarness(t, shared), newHarness(t, shared)}

	if code := servers[0].post(text(sheenaWaID, "wamid.q1", "m1")); code != http.StatusOK {
		t.Fatalf("delivery: %d", code)
	}
	<-started
	want := []string{"m1"}
	for i := range 11 {
		m := fmt.Sprintf("m%d", i+2)
		want = append(want, m)
		if code := servers[(i+1)%2].post(text(sheenaWaID, "wamid.q"+m, m)); code != http.StatusOK {
			t.Fatalf("delivery of %s: %d", m, code)
		}
	}
	close(release)
	for _, s := range servers {
		s.shutdown()
	}
	var got []string
	for _, in := range rec.inbound() {
		got = append(got, in.Text)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("answered %q, want %q", got, want)
	}
	if n := len(servers[0].graph.Sent()) + len(servers[1].graph.Sent()); n != len(want) {
		t.Fatalf("%d replies sent, want %d", n, len(want))
	}
}

// TestSharedQueueDown: when the shared Queue fails, each Server queues its
// deliveries itself and still answers them.
func TestSharedQueueDown(t *testing.T) {
	q := &memQueue{failing: true}
	h := newHarness(t, func(c *whatsapp.Config) { c.Queue = q })
	h.post(text(sheenaWaID, "wamid.down1", "one"))
	h.post(text(sheenaWaID, "wamid.down2", "two"))
	h.shutdown()
	if got, want := h.bodies(), []string{"echo: one", "echo: two"}; !slices.Equal(got, want) {
		t.Fatalf("replies %q, want %q", got, want)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "shared queue failed; queueing the message in this process") {
		t.Errorf("the failure was not logged:\n%s", logs)
	}
}
