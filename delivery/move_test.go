package delivery_test

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
)

// queue returns key's queue in in, head first, taking it apart with Done.
func queue(t *testing.T, in delivery.Inbox, key string) []string {
	t.Helper()
	var ids []string
	for {
		m, ok := deliverytest.Peek(t, in, key)
		if !ok {
			return ids
		}
		ids = append(ids, m.ID)
		deliverytest.Done(t, in, key, m.ID)
	}
}

// TestMove: Move takes every sender's queue from one inbox to another in
// order, leaves the source empty with the moved ids handled there, and a
// message already in the target (a Move cut short after its push) ends up
// queued once.
func TestMove(t *testing.T) {
	ctx := context.Background()
	src := openFile(t, filepath.Join(t.TempDir(), "inbox.json"), nil)
	dst := openFile(t, filepath.Join(t.TempDir(), "inbox.json"), nil)
	deliverytest.Push(t, src, deliverytest.Msg("+1", "a1"), deliverytest.Msg("+2", "b1"), deliverytest.Msg("+1", "a2"), deliverytest.Msg("+1", "a3"))
	deliverytest.Push(t, src, deliverytest.Msg("+3", "done"))
	deliverytest.Done(t, src, "+3", "done")
	deliverytest.Push(t, dst, deliverytest.Msg("+1", "a1"))

	n, err := delivery.Move(ctx, src, dst, &delivery.Local{})
	if err != nil || n != 4 {
		t.Fatalf("Move = %d, %v; want the 4 queued messages", n, err)
	}
	if keys := deliverytest.Keys(t, src); len(keys) != 0 {
		t.Errorf("after Move the source still has queues for %q", keys)
	}
	for _, m := range []delivery.Message{deliverytest.Msg("+1", "a1"), deliverytest.Msg("+1", "a2"), deliverytest.Msg("+1", "a3"), deliverytest.Msg("+2", "b1")} {
		if !deliverytest.Dup(t, src, m) {
			t.Errorf("%s pushed again to the source is not a duplicate: it would be answered there too", m.ID)
		}
	}
	if n, err := delivery.Move(ctx, src, dst, &delivery.Local{}); err != nil || n != 0 {
		t.Errorf("a second Move = %d, %v; want nothing moved", n, err)
	}
	if got := queue(t, dst, "+1"); !slices.Equal(got, []string{"a1", "a2", "a3"}) {
		t.Errorf("the target's queue of +1 = %q, want a1 a2 a3, once each", got)
	}
	if got := queue(t, dst, "+2"); !slices.Equal(got, []string{"b1"}) {
		t.Errorf("the target's queue of +2 = %q, want b1", got)
	}
	if got := deliverytest.Keys(t, dst); len(got) != 0 {
		t.Errorf("the target holds queues for %q, want none of what was handled in the source", got)
	}
}

// TestMoveWaitsForTheSender: Move does not take a sender's messages while
// another holder of the sender's lock may be answering them.
func TestMoveWaitsForTheSender(t *testing.T) {
	src, dst := &delivery.Volatile{}, &delivery.Volatile{}
	deliverytest.Push(t, src, deliverytest.Msg("+1", "a1"))
	var lock delivery.Local
	_, unlock, err := lock.Lock(context.Background(), "+1")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result)
	go func() {
		n, err := delivery.Move(context.Background(), src, dst, &lock)
		done <- result{n, err}
	}()
	for lock.Queued("+1") < 2 { // until Move waits for the lock
		select {
		case r := <-done:
			t.Fatalf("Move = %d, %v without waiting for the sender's lock", r.n, r.err)
		default:
			runtime.Gosched()
		}
	}
	if m, ok := deliverytest.Peek(t, src, "+1"); !ok || m.ID != "a1" || dst.Len() != 0 {
		t.Fatalf("while the sender is locked the source's head is %q (%v) and the target holds %d; want a1 and nothing", m.ID, ok, dst.Len())
	}
	unlock()
	if r := <-done; r.err != nil || r.n != 1 || dst.Len() != 1 {
		t.Errorf("Move once unlocked = %d, %v, the target holding %d; want 1 moved", r.n, r.err, dst.Len())
	}
}
