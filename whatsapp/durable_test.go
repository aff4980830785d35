package whatsapp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp"
)

// texts returns the texts the responder was asked about, in order.
func (r *recorder) texts() []string {
	var out []string
	for _, in := range r.inbound() {
		out = append(out, in.Text)
	}
	return out
}

// blockUntilStopped makes the responder signal started and then wait for
// its context, as a model call cut off by a shutdown does.
func blockUntilStopped(started chan<- string) func(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
	return func(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
		started <- in.Text
		<-ctx.Done()
		return "", ctx.Err()
	}
}

// abandon stops the Server with a shutdown whose deadline has passed, as a
// process killed while answering would, and checks it reports so.
func (h *harness) abandon() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		h.t.Errorf("Shutdown with an expired context = %v, want context.Canceled", err)
	}
	h.shut = true
}

// waitLog waits until the log holds want.
func (h *harness) waitLog(want string) {
	h.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(h.logs.String(), want); {
		if time.Now().After(deadline) {
			h.t.Fatalf("the log never said %q:\n%s", want, h.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAbandonedMessageAnsweredAfterRestart: a message acknowledged with 200
// whose answer was cut off is answered, once, by the next Server on the
// same queue and dedup files; a redelivery after that is not answered.
func TestAbandonedMessageAnsweredAfterRestart(t *testing.T) {
	h := newHarness(t)
	started := make(chan string, 1)
	h.resp.respond = blockUntilStopped(started)
	if code := h.post(text(sheenaWaID, "wamid.cut", "are you there?")); code != http.StatusOK {
		t.Fatalf("delivery: %d", code)
	}
	<-started
	h.abandon()
	if n := h.graph.Attempts(); n != 0 {
		t.Fatalf("%d replies sent by the abandoned Server", n)
	}
	for _, want := range []string{"stays queued for the next start", "messages left queued"} {
		if !strings.Contains(h.logs.String(), want) {
			t.Errorf("the log does not say %q", want)
		}
	}

	h.resp.respond = nil // echo
	h.start()
	h.shutdown()
	if got, want := h.bodies(), []string{"echo: are you there?"}; !slices.Equal(got, want) {
		t.Fatalf("after the restart, sent %q, want %q", got, want)
	}

	// Meta delivers it again: it was answered, so nothing happens, and
	// nothing is left in the queue.
	h.start()
	h.post(text(sheenaWaID, "wamid.cut", "are you there?"))
	h.shutdown()
	if n := len(h.graph.Sent()); n != 1 {
		t.Errorf("the message was answered %d times", n)
	}
	if got := h.resp.texts(); !slices.Equal(got, []string{"are you there?", "are you there?"}) {
		t.Errorf("responder asked %q: once cut off, once answered", got)
	}
	if got := keys(t, openQueue(t, h.queuePath)); len(got) != 0 {
		t.Errorf("senders still queued: %q", got)
	}
}

// TestDuplicateQueuedTwiceAnsweredOnce: a redelivery that arrives while the
// first copy waits in the inbox is skipped, and the first answered once.
func TestDuplicateQueuedTwiceAnsweredOnce(t *testing.T) {
	h := newHarness(t)
	started, release := make(chan string, 1), make(chan struct{})
	h.resp.respond = func(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
		started <- in.Text
		<-release
		return "echo: " + in.Text, nil
	}
	h.post(text(sheenaWaID, "wamid.first", "first"))
	<-started // first is being answered
	h.post(text(sheenaWaID, "wamid.dup", "dup"))
	h.post(text(sheenaWaID, "wamid.dup", "dup"))
	close(release)
	<-started // dup
	h.shutdown()
	if got, want := h.bodies(), []string{"echo: first", "echo: dup"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
	if got := h.resp.texts(); !slices.Equal(got, []string{"first", "dup"}) {
		t.Errorf("responder asked %q", got)
	}
	if !strings.Contains(h.logs.String(), "duplicate delivery skipped") {
		t.Error("the queued duplicate was not logged as skipped")
	}
	if got := keys(t, openQueue(t, h.queuePath)); len(got) != 0 {
		t.Errorf("senders still queued: %q", got)
	}
}

// TestTooOldInTheQueueIsSkipped: a message that waited in the queue
// through downtime longer than MaxAge is dropped, not answered.
func TestTooOldInTheQueueIsSkipped(t *testing.T) {
	skippedAfterDowntime(t, func(h *harness) {
		h.post(text(sheenaWaID, "wamid.stale", "still relevant?"))
	})
}

// skippedAfterDowntime delivers a message with post to a server whose
// MaxAge is an hour, abandons the server while the message is being
// answered, restarts it two hours later and checks that the message is
// skipped as too old, logged, and no longer queued.
func skippedAfterDowntime(t *testing.T, post func(h *harness)) {
	t.Helper()
	var mu sync.Mutex
	now := sampleTime
	h := newHarness(t, func(c *setup) {
		c.MaxAge = time.Hour
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	started := make(chan string, 1)
	h.resp.respond = blockUntilStopped(started)
	post(h)
	<-started
	h.abandon()

	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	h.resp.respond = nil
	h.start()
	h.shutdown()
	if n := h.graph.Attempts(); n != 0 {
		t.Errorf("a message two hours old was answered: %q", h.bodies())
	}
	if !strings.Contains(h.logs.String(), "too old to answer skipped") {
		t.Error("the skip was not logged")
	}
	if got := keys(t, openQueue(t, h.queuePath)); len(got) != 0 {
		t.Errorf("the skipped message is still queued: %q", got)
	}
}

// lossLocker is a Locker whose test may declare the lock it handed out
// lost, and which makes every Lock after the first wait for gate.
type lossLocker struct {
	mu      sync.Mutex
	calls   int
	lose    context.CancelFunc
	waiting chan struct{} // closed when the second Lock is waiting
	gate    chan struct{}
}

func (l *lossLocker) Lock(ctx context.Context, key string) (context.Context, func(), error) {
	l.mu.Lock()
	l.calls++
	first := l.calls == 1
	if l.calls == 2 {
		close(l.waiting)
	}
	l.mu.Unlock()
	if !first {
		select {
		case <-l.gate:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	held, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	if first {
		l.lose = cancel
	}
	l.mu.Unlock()
	return held, cancel, nil
}

// TestLockLostStopsTheDrain: once its lock is lost, a drain does not send
// the reply in hand, remove the message from the queue, nor take the next
// one; the next holder answers both.
func TestLockLostStopsTheDrain(t *testing.T) {
	locker := &lossLocker{waiting: make(chan struct{}), gate: make(chan struct{})}
	h := newHarness(t, func(c *setup) { c.Locker = locker })
	var openGate sync.Once
	t.Cleanup(func() { openGate.Do(func() { close(locker.gate) }) }) // before the harness's shutdown
	started, release := make(chan string, 1), make(chan struct{})
	h.resp.respond = func(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
		if in.Text == "m1" {
			started <- in.Text
			<-release
		}
		return "echo: " + in.Text, nil
	}
	h.post(text(sheenaWaID, "wamid.m1", "m1"))
	<-started
	h.post(text(sheenaWaID, "wamid.m2", "m2"))
	locker.mu.Lock()
	locker.lose()
	locker.mu.Unlock()
	close(release)

	// The next drain waits for the lock: the first has stopped.
	<-locker.waiting
	if got := h.resp.texts(); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("with its lock lost, the drain went on to answer %q", got)
	}
	if got := h.bodies(); len(got) != 0 {
		t.Fatalf("sent %q under a lost lock", got)
	}
	if !strings.Contains(h.logs.String(), "sender lock lost") {
		t.Error("the lost lock was not logged")
	}

	openGate.Do(func() { close(locker.gate) })
	h.shutdown()
	// Whether the first holder noticed the loss before or after m1's reply
	// came back is a race: before, the next holder asks for m1 again;
	// after, the reply waits unsent in the process and the next holder
	// sends it without asking again. Either way m1 is sent once.
	if got := h.resp.texts(); !slices.Equal(got, []string{"m1", "m1", "m2"}) && !slices.Equal(got, []string{"m1", "m2"}) {
		t.Errorf("responder asked %q, want m1 (once more by the next holder, unless its reply was kept), then m2", got)
	}
	if got, want := h.bodies(), []string{"echo: m1", "echo: m2"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}

// TestQueueFailuresAreRetried: a Peek that fails is tried again; one that
// keeps failing leaves the message queued for a drain a little later, or
// the next pass, which answers it.
func TestQueueFailuresAreRetried(t *testing.T) {
	t.Run("a few failures", func(t *testing.T) {
		q := &memQueue{failPeeks: 2}
		h := newHarness(t, func(c *setup) { c.Inbox = q })
		h.post(text(sheenaWaID, "wamid.retry", "hello"))
		h.shutdown()
		if got := h.bodies(); !slices.Equal(got, []string{"echo: hello"}) {
			t.Errorf("sent %q", got)
		}
		if !strings.Contains(h.logs.String(), "trying again") {
			t.Error("the retries were not logged")
		}
	})
	t.Run("until the next pass", func(t *testing.T) {
		q := &memQueue{failPeeks: 1000}
		h := newHarness(t, func(c *setup) {
			c.Inbox = q
			c.ResumeEvery = 10 * time.Millisecond
		})
		h.post(text(sheenaWaID, "wamid.later", "hello"))
		h.waitLog("wait for a drain a little later")
		if n := h.graph.Attempts(); n != 0 {
			t.Fatal("answered while the queue failed")
		}
		if n := q.len(); n != 1 {
			t.Fatalf("%d messages queued, want the one that could not be read", n)
		}
		q.mu.Lock()
		q.failPeeks = 0
		q.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := h.graph.WaitSent(ctx, 1); err != nil {
			t.Fatalf("the next pass did not answer: %v", err)
		}
		h.shutdown()
		if n := q.len(); n != 0 {
			t.Errorf("%d messages still queued", n)
		}
	})
}

// TestWithoutAQueue: with no Inbox the Server queues in memory, says that
// it is not durable, still answers a duplicate once, and says what a
// shutdown past its deadline loses.
func TestWithoutAQueue(t *testing.T) {
	h := newHarness(t)
	h.shutdown()
	h.queuePath, h.cfg.Inbox = "", nil
	h.start()
	if !strings.Contains(h.logs.String(), "no durable queue") {
		t.Error("New did not warn that the queue is not durable")
	}
	// Without a configured Inbox, duplicates are still answered once.
	h.postFile("text.json")
	h.postFile("text.json")
	h.shutdown()
	if n := len(h.graph.Sent()); n != 1 {
		t.Fatalf("%d replies, want 1", n)
	}

	h.start()
	started := make(chan string, 1)
	h.resp.respond = blockUntilStopped(started)
	h.post(text(annWaID, "wamid.lost", "lost"))
	<-started
	h.abandon()
	if !strings.Contains(h.logs.String(), "were not answered and are lost") || !strings.Contains(h.logs.String(), "messages=1") {
		t.Errorf("the lost message was not logged:\n%s", h.logs.String())
	}
}

// TestUntimedMessageAgesFromItsReceipt: a message without a timestamp that
// waited in the queue through downtime longer than MaxAge, counted from
// its receipt, is skipped.
func TestUntimedMessageAgesFromItsReceipt(t *testing.T) {
	skippedAfterDowntime(t, func(h *harness) {
		untimed := fmt.Sprintf(`{"from":%q,"id":"wamid.untimed","type":"text","text":{"body":"when?"}}`, sheenaWaID)
		if code := h.post(payload([]string{change(sheenaWaID, untimed)})); code != http.StatusOK {
			t.Fatalf("delivery: %d", code)
		}
	})
}
