package delivery_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
)

// replica is one replica's view of a shared Inbox: its Done and Sending
// fail while told to, as a replica's calls fail while the store is
// unreachable from it, and its Peeks are counted.
type replica struct {
	delivery.Inbox
	failDone, failSending atomic.Bool
	peeks, sendings       atomic.Int64
}

func (r *replica) Peek(ctx context.Context, key string) (delivery.Message, bool, error) {
	r.peeks.Add(1)
	return r.Inbox.Peek(ctx, key)
}

func (r *replica) Sending(ctx context.Context, key, id string) error {
	r.sendings.Add(1)
	if r.failSending.Load() {
		return errDown
	}
	return r.Inbox.Sending(ctx, key, id)
}

func (r *replica) Done(ctx context.Context, key, id string) error {
	if r.failDone.Load() {
		return errDown
	}
	return r.Inbox.Done(ctx, key, id)
}

// replicaLocker is one replica's view of a lock shared with others (a
// Local): cut makes it lose the locks it holds, which pass to the
// replicas waiting, as a lease runs out while its holder cannot renew it;
// from then on its Lock waits until its ctx ends.
type replicaLocker struct {
	shared *delivery.Local
	mu     sync.Mutex
	isCut  bool
	held   []func()
}

func (l *replicaLocker) Lock(ctx context.Context, key string) (context.Context, func(), error) {
	l.mu.Lock()
	isCut := l.isCut
	l.mu.Unlock()
	if isCut {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	held, unlock, err := l.shared.Lock(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	held, lose := context.WithCancelCause(held)
	l.mu.Lock()
	l.held = append(l.held, func() { lose(delivery.ErrLockLost); unlock() })
	l.mu.Unlock()
	return held, unlock, nil
}

func (l *replicaLocker) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.isCut = true
	for _, lose := range l.held {
		lose()
	}
}

// TestPipelineSendingWaitsForItsSender: replica H sends m1's reply, its
// Done fails and its lock passes to replica R, which finds m1 marked at
// the head of the shared queue. R waits; H's Done lands meanwhile; R goes
// on with the sender's next message: m1 is answered once.
func TestPipelineSendingWaitsForItsSender(t *testing.T) {
	shared, lock := &delivery.Volatile{}, &delivery.Local{}
	hin, rin := &replica{Inbox: shared}, &replica{Inbox: shared}
	hl, rl := &replicaLocker{shared: lock}, &replicaLocker{shared: lock}
	hh, hr := &handler{}, &handler{}
	hin.failDone.Store(true)
	h := delivery.New(hh, &delivery.Options{Inbox: hin, Locker: hl, ResumeEvery: time.Hour, ShutdownLockWait: time.Millisecond, Logger: quiet})
	if errs := h.Accept(context.Background(), deliverytest.Msg("+1", "m1"), deliverytest.Msg("+1", "m2")); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	waitFor(t, "m1's reply from H", func() bool { _, sent := hh.got(); return len(sent) == 1 })
	// Longer than H's retries of Done (0.7 s), so that a grace counted
	// from H's send, not from R's finding, could not pass for waiting.
	r := delivery.New(hr, &delivery.Options{Inbox: rin, Locker: rl, ResumeEvery: 5 * time.Millisecond, SendingGrace: 3 * time.Second, Logger: quiet})
	deliverytest.WaitQueued(t, lock, "+1", 2)
	hl.cut()
	waitFor(t, "R's look at the sender's queue", func() bool { return rin.peeks.Load() > 0 })
	hin.failDone.Store(false)
	waitFor(t, "m2's reply", func() bool { _, sent := hr.got(); return len(sent) == 1 })
	shutdown(t, r)
	shutdown(t, h)
	askedH, sentH := hh.got()
	askedR, sentR := hr.got()
	if !slices.Equal(askedH, []string{"m1"}) || !slices.Equal(askedR, []string{"m2"}) {
		t.Errorf("H asked %q, R asked %q; want m1 by H, then m2 by R, once each", askedH, askedR)
	}
	if all := append(sentH, sentR...); !slices.Equal(all, []string{"re m1", "re m2"}) {
		t.Errorf("sent %q, want each reply once", all)
	}
}

// TestPipelineSendingHolderDied: a message marked by a holder that never
// records it (it died after sending, or before) is answered after the
// wait: at least once.
func TestPipelineSendingHolderDied(t *testing.T) {
	shared := &delivery.Volatile{}
	deliverytest.Push(t, shared, deliverytest.Msg("+1", "m1"), deliverytest.Msg("+1", "m2"))
	deliverytest.Sending(t, shared, "+1", "m1")
	hr := &handler{}
	r := delivery.New(hr, &delivery.Options{Inbox: shared, SendingGrace: 50 * time.Millisecond, Logger: quiet})
	waitFor(t, "the replies", func() bool { _, sent := hr.got(); return len(sent) == 2 })
	shutdown(t, r)
	if asked, _ := hr.got(); !slices.Equal(asked, []string{"m1", "m2"}) {
		t.Errorf("asked %q, want m1 then m2", asked)
	}
	if shared.Len() != 0 || !shared.Handled("m1") {
		t.Error("m1 is not done with")
	}
}

// TestPipelineSendingShutdown: a shutdown that runs out of time during
// the wait for a marked message's holder ends it; the message stays
// queued, marked.
func TestPipelineSendingShutdown(t *testing.T) {
	shared := &replica{Inbox: &delivery.Volatile{}}
	deliverytest.Push(t, shared, deliverytest.Msg("+1", "m1"))
	deliverytest.Sending(t, shared, "+1", "m1")
	hr := &handler{}
	r := delivery.New(hr, &delivery.Options{Inbox: shared, SendingGrace: time.Hour, Logger: quiet})
	waitFor(t, "the look at the queue", func() bool { return shared.peeks.Load() > 0 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown out of time = %v, want context.Canceled", err)
	}
	if asked, _ := hr.got(); len(asked) != 0 {
		t.Errorf("asked %q during the wait", asked)
	}
	if m, _ := deliverytest.Peek(t, shared, "+1"); m.ID != "m1" || !m.Sending {
		t.Errorf("head = %s, Sending %v; want m1 marked", m.ID, m.Sending)
	}
}

// TestPipelineSendingFails: a reply whose mark cannot be written is not
// sent; the drain keeps it and the sender's lock, and sends it once the
// Inbox works, without asking the Handler again.
func TestPipelineSendingFails(t *testing.T) {
	in := &replica{Inbox: &delivery.Volatile{}}
	in.failSending.Store(true)
	h := &handler{}
	p := delivery.New(h, &delivery.Options{Inbox: in, Logger: quiet})
	if err := p.Accept(context.Background(), deliverytest.Msg("+1", "m"))[0]; err != nil {
		t.Fatal(err)
	}
	// Past the first tries, into those made every second.
	waitFor(t, "the failed marks", func() bool { return in.sendings.Load() >= 5 })
	if _, sent := h.got(); len(sent) != 0 {
		t.Fatalf("sent %q while the mark fails", sent)
	}
	in.failSending.Store(false)
	waitFor(t, "m done", func() bool { return in.Inbox.(*delivery.Volatile).Handled("m") })
	shutdown(t, p)
	if asked, sent := h.got(); !slices.Equal(asked, []string{"m"}) || !slices.Equal(sent, []string{"re m"}) {
		t.Errorf("asked %q, sent %q; want once each", asked, sent)
	}
}
