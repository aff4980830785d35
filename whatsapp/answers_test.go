package whatsapp_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp/graphtest"
)

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestAnsweredButNotRecordedIsNotAnsweredAgain: when the Inbox cannot
// record that a message was answered (its Done, which also removes it,
// fails), the drain holds on to the sender and tries Done again, and
// neither the passes meanwhile nor a redelivery answer it again; once
// Done works the message is recorded and removed, answered once.
func TestAnsweredButNotRecordedIsNotAnsweredAgain(t *testing.T) {
	q := &memQueue{failAcks: true}
	h := newHarness(t, func(c *setup) {
		c.Inbox = q
		c.ResumeEvery = 5 * time.Millisecond
	})

	if code := h.post(text(sheenaWaID, "wamid.once", "hello")); code != http.StatusOK {
		t.Fatalf("delivery: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.graph.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Done is tried again, and passes come, while it fails.
	from := q.doned()
	waitFor(t, "Done tried again", func() bool { return q.doned() >= from+2 })
	if got := h.bodies(); !slices.Equal(got, []string{"echo: hello"}) {
		t.Fatalf("with the inbox failing to record, sent %q: answered again", got)
	}
	if q.handled("wamid.once") {
		t.Fatal("recorded as handled while Done fails")
	}
	// A redelivery meanwhile is not answered either.
	h.post(text(sheenaWaID, "wamid.once", "hello"))

	q.set(func(q *memQueue) { q.failAcks = false })
	waitFor(t, "the message to leave the queue", func() bool { return q.len() == 0 })
	waitFor(t, "the message to be recorded", func() bool { return q.handled("wamid.once") })
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
		h := newHarness(t, func(c *setup) {
			c.Inbox = q
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
		h := newHarness(t, func(c *setup) {
			c.Inbox = q
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
