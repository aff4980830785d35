package whatsapp_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// downDedup is a Dedup that fails every call while down, as a Redis that
// cannot be reached does.
type downDedup struct {
	mu   sync.Mutex
	down bool
	ids  map[string]bool
}

var errDedupDown = errors.New("downDedup: down")

func (d *downDedup) Handled(_ context.Context, id string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return false, errDedupDown
	}
	return d.ids[id], nil
}

func (d *downDedup) MarkHandled(_ context.Context, id string, _ time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return errDedupDown
	}
	if d.ids == nil {
		d.ids = map[string]bool{}
	}
	d.ids[id] = true
	return nil
}

func (d *downDedup) setDown(down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = down
}

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestAnsweredButNotRecordedIsNotAnsweredAgain: when neither the Dedup nor
// the Queue can record that a message was answered, the passes that find it
// still queued do not answer it again; once they work again it is recorded
// and removed, still answered once.
func TestAnsweredButNotRecordedIsNotAnsweredAgain(t *testing.T) {
	q := &memQueue{failAcks: true}
	dedup := &downDedup{down: true}
	h := newHarness(t, func(c *whatsapp.Config) {
		c.Queue = q
		c.ResumeEvery = 5 * time.Millisecond
	})
	// The harness opens a DedupFile; this test's replaces it.
	h.shutdown()
	h.cfg.Dedup = dedup
	srv, err := whatsapp.New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.srv, h.shut = srv, false

	if code := h.post(text(sheenaWaID, "wamid.once", "hello")); code != http.StatusOK {
		t.Fatalf("delivery: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.graph.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Several passes find the message still queued.
	from := q.peeked()
	waitFor(t, "later passes", func() bool { return q.peeked() >= from+3 })
	if got := h.bodies(); !slices.Equal(got, []string{"echo: hello"}) {
		t.Fatalf("with the dedup and the queue down, sent %q: answered again", got)
	}
	// A redelivery meanwhile is not answered either.
	h.post(text(sheenaWaID, "wamid.once", "hello"))

	dedup.setDown(false)
	q.set(func(q *memQueue) { q.failAcks = false })
	waitFor(t, "the message to leave the queue", func() bool { return q.len() == 0 })
	waitFor(t, "the message to be recorded", func() bool {
		done, _ := dedup.Handled(context.Background(), "wamid.once")
		return done
	})
	h.shutdown()
	if got := h.bodies(); !slices.Equal(got, []string{"echo: hello"}) {
		t.Errorf("sent %q, want one reply", got)
	}
	if got := h.resp.texts(); !slices.Equal(got, []string{"hello"}) {
		t.Errorf("responder asked %q, want once", got)
	}
}

// TestReplyNotSentForNowIsSentLater: a reply the Graph API refuses for a
// passing reason past the client's retries stays queued and is sent at a
// later pass, without asking the responder again; one refused for good is
// done with.
func TestReplyNotSentForNowIsSentLater(t *testing.T) {
	t.Run("temporary", func(t *testing.T) {
		q := &memQueue{}
		h := newHarness(t, func(c *whatsapp.Config) {
			c.Queue = q
			c.MaxAttempts = 2
			c.ResumeEvery = 5 * time.Millisecond
		})
		h.graph.FailNext(2, http.StatusServiceUnavailable)
		h.post(text(sheenaWaID, "wamid.later", "hello"))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := h.graph.WaitSent(ctx, 1); err != nil {
			t.Fatalf("the reply was never sent: %v", err)
		}
		waitFor(t, "the message to leave the queue", func() bool { return q.len() == 0 })
		h.shutdown()
		if got := h.bodies(); !slices.Equal(got, []string{"echo: hello"}) {
			t.Errorf("sent %q", got)
		}
		if n := h.graph.Attempts(); n != 3 {
			t.Errorf("%d attempts, want 2 failed and 1 sent", n)
		}
		if got := h.resp.texts(); !slices.Equal(got, []string{"hello"}) {
			t.Errorf("responder asked %q, want once", got)
		}
	})
	t.Run("permanent", func(t *testing.T) {
		q := &memQueue{}
		h := newHarness(t, func(c *whatsapp.Config) {
			c.Queue = q
			c.ResumeEvery = 5 * time.Millisecond
		})
		h.graph.FailNextWith(1, graphtest.Failure{Status: http.StatusBadRequest, Code: 131047})
		h.post(text(sheenaWaID, "wamid.never", "hello"))
		waitFor(t, "the message to leave the queue", func() bool { return q.len() == 0 })
		h.shutdown()
		if n := h.graph.Attempts(); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
		if h.graph.Sent() != nil {
			t.Errorf("sent %q", h.bodies())
		}
	})
}
