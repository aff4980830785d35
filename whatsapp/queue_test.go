package whatsapp_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/whatsapp"
)

// memQueue is an Inbox in memory, shared by the Servers of a test as a
// Redis inbox is by replicas. Every call fails while failing is set, the
// next failPeeks calls of Peek fail, and Done fails while failAcks is set.
type memQueue struct {
	in delivery.Volatile

	mu        sync.Mutex
	failing   bool
	failPeeks int
	failAcks  bool
	dones     int
}

var errQueueDown = errors.New("memQueue: down")

func (q *memQueue) Push(ctx context.Context, batch ...delivery.Message) ([]bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing {
		return nil, errQueueDown
	}
	return q.in.Push(ctx, batch...)
}

func (q *memQueue) Peek(ctx context.Context, key string) (delivery.Message, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing || q.failPeeks > 0 {
		q.failPeeks--
		return delivery.Message{}, false, errQueueDown
	}
	return q.in.Peek(ctx, key)
}

func (q *memQueue) Sending(ctx context.Context, key, id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing {
		return errQueueDown
	}
	return q.in.Sending(ctx, key, id)
}

func (q *memQueue) Done(ctx context.Context, key, id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.dones++
	if q.failing || q.failAcks {
		return errQueueDown
	}
	return q.in.Done(ctx, key, id)
}

func (q *memQueue) Keys(ctx context.Context) ([]string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing {
		return nil, errQueueDown
	}
	return q.in.Keys(ctx)
}

func (q *memQueue) Erase(ctx context.Context, key string) (int, int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing {
		return 0, 0, errQueueDown
	}
	return q.in.Erase(ctx, key)
}

func (q *memQueue) HandledIDs(ctx context.Context) ([]delivery.HandledID, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing {
		return nil, errQueueDown
	}
	return q.in.HandledIDs(ctx)
}

func (q *memQueue) RecordHandled(ctx context.Context, hs ...delivery.HandledID) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing {
		return 0, errQueueDown
	}
	return q.in.RecordHandled(ctx, hs...)
}

// handled reports whether id is recorded as handled.
func (q *memQueue) handled(id string) bool { return q.in.Handled(id) }

// doned returns the number of calls of Done so far.
func (q *memQueue) doned() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dones
}

// set changes the queue's failures under its lock.
func (q *memQueue) set(f func(q *memQueue)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f(q)
}

// len returns the number of messages queued.
func (q *memQueue) len() int { return q.in.Len() }

// pollLocker is a Locker whose waiters poll at random intervals, as those
// of the Redis locker do, so they are not served in the order they came.
type pollLocker struct {
	mu   sync.Mutex
	held map[string]bool
}

func (l *pollLocker) Lock(ctx context.Context, key string) (context.Context, func(), error) {
	for {
		l.mu.Lock()
		if l.held == nil {
			l.held = map[string]bool{}
		}
		if !l.held[key] {
			l.held[key] = true
			l.mu.Unlock()
			held, cancel := context.WithCancel(context.Background())
			return held, func() { cancel(); l.mu.Lock(); delete(l.held, key); l.mu.Unlock() }, nil
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
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
	rec := &recorder{respond: func(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
		if in.Text == "m1" {
			started <- struct{}{}
			<-release
		}
		return "echo: " + in.Text, nil
	}}
	shared := func(c *setup) { c.Inbox, c.Locker, c.Responder = q, locker, rec }
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

// TestSharedQueueDown: when the shared Queue fails, each Server holds its
// deliveries in memory and still answers them, in order, and says so.
func TestSharedQueueDown(t *testing.T) {
	q := &memQueue{failing: true}
	h := newHarness(t, func(c *setup) { c.Inbox, c.MemoryFallback = q, true })
	for _, code := range []int{h.post(text(sheenaWaID, "wamid.down1", "one")), h.post(text(sheenaWaID, "wamid.down2", "two"))} {
		if code != http.StatusOK {
			t.Errorf("delivery with the queue down: %d", code)
		}
	}
	h.shutdown()
	if got, want := h.bodies(), []string{"echo: one", "echo: two"}; !slices.Equal(got, want) {
		t.Fatalf("replies %q, want %q", got, want)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "queue failed; the messages are held in this process's memory only") {
		t.Errorf("the failure was not logged:\n%s", logs)
	}
}

// TestQueueFailureKeepsOrder: a message the Queue fails to take, held in
// memory, is answered after the sender's earlier messages in the Queue,
// and before the later ones, which join it in memory.
func TestQueueFailureKeepsOrder(t *testing.T) {
	q := &memQueue{}
	started, release := make(chan struct{}, 1), make(chan struct{})
	h := newHarness(t, func(c *setup) { c.Inbox, c.MemoryFallback = q, true })
	h.resp.respond = func(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
		if in.Text == "A" {
			started <- struct{}{}
			<-release
		}
		return "echo: " + in.Text, nil
	}
	h.post(text(sheenaWaID, "wamid.A", "A"))
	<-started
	h.post(text(sheenaWaID, "wamid.B0", "B0")) // in the Queue, behind A
	q.set(func(q *memQueue) { q.failing = true })
	h.post(text(sheenaWaID, "wamid.B", "B")) // in memory
	q.set(func(q *memQueue) { q.failing = false })
	h.post(text(sheenaWaID, "wamid.C", "C"))
	close(release)
	h.shutdown()
	if got, want := h.resp.texts(), []string{"A", "B0", "B", "C"}; !slices.Equal(got, want) {
		t.Errorf("answered %q, want %q", got, want)
	}
}

// TestQueueFileFailureRefusesTheDelivery: without MemoryFallback, a
// delivery whose message the inbox file cannot write (a full disk) is
// refused with 503, so that Meta delivers it again, and not answered; the
// redelivery, once the disk works, is.
func TestQueueFileFailureRefusesTheDelivery(t *testing.T) {
	h := newHarness(t)
	h.shutdown()
	dir := filepath.Join(t.TempDir(), "gone")
	h.queuePath = filepath.Join(dir, "whatsapp-inbox.json")
	h.start()
	if code := h.post(text(sheenaWaID, "wamid.full", "hello")); code != http.StatusServiceUnavailable {
		t.Errorf("delivery with the queue file unwritable: %d, want 503", code)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if code := h.post(text(sheenaWaID, "wamid.full", "hello")); code != http.StatusOK {
		t.Errorf("redelivery: %d, want 200", code)
	}
	h.shutdown()
	if got := h.bodies(); !slices.Equal(got, []string{"echo: hello"}) {
		t.Errorf("sent %q, want the redelivery answered once", got)
	}
	if !strings.Contains(h.logs.String(), "the delivery is refused") {
		t.Error("the refusal was not logged")
	}
}

// refusals is a whatsapp.Observer that counts the messages refused.
type refusals struct{ n atomic.Int32 }

func (*refusals) Webhook(string)         {}
func (*refusals) MessageSkipped(string)  {}
func (r *refusals) MessageRefused()      { r.n.Add(1) }
func (*refusals) SendAttempt(bool, bool) {}
func (*refusals) ReplyNotSent(bool)      {}

// TestSharedQueueDownRefuses: without MemoryFallback, a delivery the
// shared Queue cannot take is refused (503) for Meta to deliver again,
// each of its messages counted refused, and nothing is answered.
func TestSharedQueueDownRefuses(t *testing.T) {
	q := &memQueue{failing: true}
	obs := &refusals{}
	h := newHarness(t, func(c *setup) { c.Inbox, c.Observer = q, obs })
	if code := h.post(text(sheenaWaID, "wamid.refused", "one")); code != http.StatusServiceUnavailable {
		t.Errorf("delivery with the queue down: %d, want 503", code)
	}
	h.shutdown()
	if n := obs.n.Load(); n != 1 {
		t.Errorf("%d messages counted refused, want 1", n)
	}
	if got := h.bodies(); len(got) != 0 {
		t.Errorf("replies %q to a refused delivery", got)
	}
}
