package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
)

// handler is a delivery.Handler that records what it is asked and sent.
// answer and send, when set, decide the outcome of each call.
type handler struct {
	mu     sync.Mutex
	asked  []string
	sent   []string
	answer func(ctx context.Context, m delivery.Message) ([]string, error)
	send   func(m delivery.Message, parts []string) (int, error)
	// locker, when set, is the Pipeline's; heldFor records whether each
	// Answer was given a lock that is held, and that locker's lock on the
	// sender was taken then.
	locker  *delivery.Local
	heldFor []bool
}

func (h *handler) Answer(ctx, lock context.Context, m delivery.Message) ([]string, error) {
	held := lock != nil && lock.Err() == nil && (h.locker == nil || h.locker.Queued(m.Key) > 0)
	h.mu.Lock()
	h.asked = append(h.asked, m.ID)
	h.heldFor = append(h.heldFor, held)
	answer := h.answer
	h.mu.Unlock()
	if answer != nil {
		return answer(ctx, m)
	}
	return []string{"re " + m.ID}, nil
}

func (h *handler) Send(ctx context.Context, m delivery.Message, parts []string) (int, error) {
	h.mu.Lock()
	send := h.send
	h.mu.Unlock()
	if send != nil {
		if n, err := send(m, parts); err != nil {
			return n, err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent = append(h.sent, parts...)
	return len(parts), nil
}

func (h *handler) got() (asked, sent []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.asked), slices.Clone(h.sent)
}

// flaky is an Inbox whose Push or Done fail while told to.
type flaky struct {
	delivery.Volatile
	mu               sync.Mutex
	failPush, failDo bool
}

var errDown = errors.New("flaky: down")

func (f *flaky) Push(ctx context.Context, batch ...delivery.Message) ([]bool, error) {
	f.mu.Lock()
	fail := f.failPush
	f.mu.Unlock()
	if fail {
		return nil, errDown
	}
	return f.Volatile.Push(ctx, batch...)
}

func (f *flaky) Done(ctx context.Context, key, id string) error {
	f.mu.Lock()
	fail := f.failDo
	f.mu.Unlock()
	if fail {
		return errDown
	}
	return f.Volatile.Done(ctx, key, id)
}

func (f *flaky) set(push, done bool) {
	f.mu.Lock()
	f.failPush, f.failDo = push, done
	f.mu.Unlock()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func shutdown(t *testing.T, p *delivery.Pipeline) {
	t.Helper()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestPipelineOrderAndDuplicates: a sender's messages are answered in the
// order accepted, under the sender's lock handed to Answer; a message waiting,
// or handled (also by an earlier Pipeline on the same Inbox), is a
// duplicate.
func TestPipelineOrderAndDuplicates(t *testing.T) {
	inbox := openFile(t, t.TempDir()+"/inbox.json", nil)
	h := &handler{locker: &delivery.Local{}}
	release := make(chan struct{})
	h.answer = func(ctx context.Context, m delivery.Message) ([]string, error) {
		if m.ID == "a1" {
			<-release
		}
		return []string{"re " + m.ID}, nil
	}
	p := delivery.New(h, &delivery.Options{Inbox: inbox, Locker: h.locker, Logger: quiet})
	ctx := context.Background()
	for _, m := range []delivery.Message{deliverytest.Msg("+1", "a1"), deliverytest.Msg("+1", "a2"), deliverytest.Msg("+2", "b1"), deliverytest.Msg("+1", "a3")} {
		if err := p.Accept(ctx, m)[0]; err != nil {
			t.Fatalf("Accept(%s): %v", m.ID, err)
		}
	}
	if err := p.Accept(ctx, deliverytest.Msg("+1", "a2"))[0]; !errors.Is(err, delivery.ErrDuplicate) {
		t.Errorf("Accept of a message waiting = %v, want ErrDuplicate", err)
	}
	// Another sender is not held up by the first.
	waitFor(t, "b1's reply", func() bool { _, sent := h.got(); return slices.Contains(sent, "re b1") })
	close(release)
	shutdown(t, p)
	asked, sent := h.got()
	var ones []string
	for _, s := range sent {
		if strings.HasPrefix(s, "re a") {
			ones = append(ones, s)
		}
	}
	if want := []string{"re a1", "re a2", "re a3"}; !slices.Equal(ones, want) {
		t.Errorf("sent to +1 %q, want %q", ones, want)
	}
	if len(asked) != 4 {
		t.Errorf("asked %q, want each once", asked)
	}
	for i, held := range h.heldFor {
		if !held {
			t.Errorf("Answer %d was not given its sender's lock, held", i)
		}
	}
	p = delivery.New(h, &delivery.Options{Inbox: openFile(t, inbox.Path(), nil), Logger: quiet})
	defer shutdown(t, p)
	if err := p.Accept(ctx, deliverytest.Msg("+1", "a1"))[0]; !errors.Is(err, delivery.ErrDuplicate) {
		t.Errorf("Accept after a restart of a message handled = %v, want ErrDuplicate", err)
	}
}

// TestPipelineSkip: a message the Handler skips is done with, nothing sent.
func TestPipelineSkip(t *testing.T) {
	inbox := &delivery.Volatile{}
	h := &handler{answer: func(context.Context, delivery.Message) ([]string, error) {
		return nil, fmt.Errorf("too old: %w", delivery.ErrSkip)
	}}
	p := delivery.New(h, &delivery.Options{Inbox: inbox, Logger: quiet})
	p.Accept(context.Background(), deliverytest.Msg("+1", "old"))
	shutdown(t, p)
	if _, sent := h.got(); len(sent) != 0 {
		t.Errorf("sent %q for a skipped message", sent)
	}
	if !inbox.Handled("old") || inbox.Len() != 0 {
		t.Error("a skipped message is not done with")
	}
}

// TestPipelineSendLater: a send that fails for now keeps the rest of the
// reply in the process; a later pass sends it without asking again, and
// only then is the message done.
func TestPipelineSendLater(t *testing.T) {
	inbox := &flaky{}
	h := &handler{answer: func(context.Context, delivery.Message) ([]string, error) { return []string{"one", "two"}, nil }}
	var mu sync.Mutex
	fails := 1
	// The first send gets one part out of two through, as the WhatsApp
	// handler sends part by part.
	h.send = func(m delivery.Message, parts []string) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if fails > 0 && len(parts) == 2 {
			fails--
			return 1, fmt.Errorf("503: %w", delivery.ErrTemporary)
		}
		return 0, nil
	}
	p := delivery.New(h, &delivery.Options{Inbox: inbox, ResumeEvery: 5 * time.Millisecond, Logger: quiet})
	p.Accept(context.Background(), deliverytest.Msg("+1", "m"))
	waitFor(t, "the message done", func() bool { return inbox.Handled("m") })
	shutdown(t, p)
	asked, sent := h.got()
	if !slices.Equal(asked, []string{"m"}) {
		t.Errorf("asked %q, want once", asked)
	}
	if !slices.Equal(sent, []string{"two"}) {
		t.Errorf("sent after the failure %q, want the part left", sent)
	}
}

// TestPipelineDoneFails: a message whose reply is sent but whose Done
// fails is not answered again, neither at the next passes nor when
// delivered again, and is done once Done works.
func TestPipelineDoneFails(t *testing.T) {
	inbox := &flaky{}
	inbox.set(false, true)
	h := &handler{}
	p := delivery.New(h, &delivery.Options{Inbox: inbox, ResumeEvery: 5 * time.Millisecond, Logger: quiet})
	p.Accept(context.Background(), deliverytest.Msg("+1", "m"))
	waitFor(t, "the reply", func() bool { _, sent := h.got(); return len(sent) == 1 })
	time.Sleep(50 * time.Millisecond) // several passes
	if err := p.Accept(context.Background(), deliverytest.Msg("+1", "m"))[0]; !errors.Is(err, delivery.ErrDuplicate) {
		t.Errorf("Accept of a message sent but not recorded = %v, want ErrDuplicate", err)
	}
	if asked, sent := h.got(); len(asked) != 1 || len(sent) != 1 {
		t.Fatalf("asked %q, sent %q while Done fails: want once each", asked, sent)
	}
	inbox.set(false, false)
	waitFor(t, "the message done", func() bool { return inbox.Handled("m") && inbox.Len() == 0 })
	shutdown(t, p)
	if asked, sent := h.got(); len(asked) != 1 || len(sent) != 1 {
		t.Errorf("asked %q, sent %q: want once each", asked, sent)
	}
}

// TestPipelinePushFails: a message the Inbox cannot take is refused, or,
// with MemoryFallback, answered from memory.
func TestPipelinePushFails(t *testing.T) {
	inbox := &flaky{}
	inbox.set(true, false)
	h := &handler{}
	p := delivery.New(h, &delivery.Options{Inbox: inbox, Logger: quiet})
	if err := p.Accept(context.Background(), deliverytest.Msg("+1", "m"))[0]; !errors.Is(err, delivery.ErrRefused) {
		t.Errorf("Accept with the inbox down = %v, want ErrRefused", err)
	}
	shutdown(t, p)

	p = delivery.New(h, &delivery.Options{Inbox: inbox, MemoryFallback: true, Logger: quiet})
	if err := p.Accept(context.Background(), deliverytest.Msg("+1", "m"))[0]; err != nil {
		t.Errorf("Accept with the inbox down and MemoryFallback = %v", err)
	}
	shutdown(t, p)
	if _, sent := h.got(); !slices.Equal(sent, []string{"re m"}) {
		t.Errorf("sent %q, want the message held in memory answered", sent)
	}
	if err := p.Accept(context.Background(), deliverytest.Msg("+1", "n"))[0]; !errors.Is(err, delivery.ErrRefused) {
		t.Errorf("Accept after Shutdown = %v, want ErrRefused", err)
	}
}

// slowPush is an Inbox whose Push keeps the message but reports a failure,
// as a push to Redis that timed out after Redis had done it.
type slowPush struct{ delivery.Volatile }

func (s *slowPush) Push(ctx context.Context, batch ...delivery.Message) ([]bool, error) {
	s.Volatile.Push(ctx, batch...)
	return nil, context.DeadlineExceeded
}

// TestPipelinePushKeptAfterAll: a message answered from memory because its
// push seemed to fail, though the Inbox kept it, is not answered again
// from the Inbox. The pipeline's first look for messages left in the Inbox
// may find the kept copy and answer it before Accept holds the message in
// memory; Accept then reports the message as handled already.
func TestPipelinePushKeptAfterAll(t *testing.T) {
	inbox := &slowPush{}
	h := &handler{}
	p := delivery.New(h, &delivery.Options{Inbox: inbox, MemoryFallback: true, Logger: quiet})
	if err := p.Accept(context.Background(), deliverytest.Msg("+1", "m"))[0]; err != nil && !errors.Is(err, delivery.ErrDuplicate) {
		t.Fatalf("Accept = %v, want nil or ErrDuplicate", err)
	}
	shutdown(t, p)
	if asked, sent := h.got(); len(asked) != 1 || len(sent) != 1 {
		t.Errorf("asked %q, sent %q: want once each", asked, sent)
	}
	if inbox.Len() != 0 || !inbox.Handled("m") {
		t.Error("the Inbox's copy was not done with")
	}
}

// TestPipelineDoneFailsHoldsTheLock: while the Done of a message whose
// reply is sent fails, the sender's lock stays with the Pipeline that sent
// it, so that another replica on the same Inbox and Locker does not find
// the message queued and answer it again; once Done works, the lock
// passes and the sender's next message is answered.
func TestPipelineDoneFailsHoldsTheLock(t *testing.T) {
	inbox := &flaky{}
	inbox.set(false, true)
	locker := &delivery.Local{}
	ha, hb := &handler{}, &handler{}
	a := delivery.New(ha, &delivery.Options{Inbox: inbox, Locker: locker, ResumeEvery: time.Hour, Logger: quiet})
	if err := a.Accept(context.Background(), deliverytest.Msg("+1", "m1"))[0]; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply", func() bool { _, sent := ha.got(); return len(sent) == 1 })
	// Another replica, whose passes look at the shared Inbox often.
	b := delivery.New(hb, &delivery.Options{Inbox: inbox, Locker: locker, ResumeEvery: 5 * time.Millisecond, Logger: quiet})
	deliverytest.WaitQueued(t, locker, "+1", 2)
	// Longer than a's retries of Done (0.7 s), and many of b's passes.
	time.Sleep(1500 * time.Millisecond)
	if asked, _ := hb.got(); len(asked) != 0 {
		t.Fatalf("the other replica answered %q while the first could not record its reply", asked)
	}
	inbox.set(false, false)
	waitFor(t, "m1 done", func() bool { return inbox.Handled("m1") })
	if err := b.Accept(context.Background(), deliverytest.Msg("+1", "m2"))[0]; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "m2's reply", func() bool {
		_, sa := ha.got()
		_, sb := hb.got()
		return len(sa)+len(sb) == 2
	})
	shutdown(t, a)
	shutdown(t, b)
	asked, _ := ha.got()
	askedB, _ := hb.got()
	if all := append(asked, askedB...); !slices.Equal(all, []string{"m1", "m2"}) {
		t.Errorf("asked %q, want m1 then m2, once each", all)
	}
}

// losingLocker is a Local whose locks can be lost to another holder, as
// a lease runs out while its store is down and another replica takes it:
// lose ends every held context with ErrLockLost, and from then on Lock
// waits, as for a holder that keeps the sender, until its ctx ends.
type losingLocker struct {
	delivery.Local
	mu     sync.Mutex
	lost   bool
	losers []context.CancelCauseFunc
}

func (l *losingLocker) Lock(ctx context.Context, key string) (context.Context, func(), error) {
	l.mu.Lock()
	lost := l.lost
	l.mu.Unlock()
	if lost {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	held, unlock, err := l.Local.Lock(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	held, lose := context.WithCancelCause(held)
	l.mu.Lock()
	l.losers = append(l.losers, lose)
	l.mu.Unlock()
	return held, unlock, nil
}

func (l *losingLocker) lose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost = true
	for _, lose := range l.losers {
		lose(delivery.ErrLockLost)
	}
}

// TestPipelineDoneOutlivesTheLock: a Pipeline whose reply is sent and
// whose Done fails goes on trying Done after its lock is lost (a lease
// run out while its store was down), so that the reply is recorded once
// the Inbox is back by the Pipeline that sent it, rather than left queued
// for the sender's next holder to find and answer again.
func TestPipelineDoneOutlivesTheLock(t *testing.T) {
	inbox := &flaky{}
	inbox.set(false, true)
	locker := &losingLocker{}
	h := &handler{}
	p := delivery.New(h, &delivery.Options{Inbox: inbox, Locker: locker, ResumeEvery: time.Hour, ShutdownLockWait: time.Millisecond, Logger: quiet})
	if err := p.Accept(context.Background(), deliverytest.Msg("+1", "m1"))[0]; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply", func() bool { _, sent := h.got(); return len(sent) == 1 })
	locker.lose()
	// Down for longer than the first retries of Done (0.7 s).
	time.Sleep(1500 * time.Millisecond)
	inbox.set(false, false)
	waitFor(t, "m1 recorded by the Pipeline that sent its reply", func() bool { return inbox.Handled("m1") })
	shutdown(t, p)
	if asked, sent := h.got(); len(asked) != 1 || len(sent) != 1 {
		t.Errorf("asked %q, sent %q; want m1 once", asked, sent)
	}
}
