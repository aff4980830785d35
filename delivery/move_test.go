package delivery_test

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

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

	n, h, err := delivery.Move(ctx, src, dst, &delivery.Local{})
	if err != nil || n != 4 || h != 1 {
		t.Fatalf("Move = %d, %d, %v; want the 4 queued messages and the id handled", n, h, err)
	}
	if keys := deliverytest.Keys(t, src); len(keys) != 0 {
		t.Errorf("after Move the source still has queues for %q", keys)
	}
	for _, m := range []delivery.Message{deliverytest.Msg("+1", "a1"), deliverytest.Msg("+1", "a2"), deliverytest.Msg("+1", "a3"), deliverytest.Msg("+2", "b1")} {
		if !deliverytest.Dup(t, src, m) {
			t.Errorf("%s pushed again to the source is not a duplicate: it would be answered there too", m.ID)
		}
	}
	if n, h, err := delivery.Move(ctx, src, dst, &delivery.Local{}); err != nil || n != 0 || h != 0 {
		t.Errorf("a second Move = %d, %d, %v; want nothing moved or recorded", n, h, err)
	}
	if !deliverytest.Dup(t, dst, deliverytest.Msg("+3", "done")) {
		t.Error("the id handled in the source pushed to the target is not a duplicate: it would be answered again")
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

// TestMoveKeepsWhenHandled: the ids handled move with the time they were
// handled, so that the target forgets each when the source would have,
// and with their senders, so that Erase on the target removes them.
func TestMoveKeepsWhenHandled(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	srcNow, dstNow := t0, t0
	src := openFile(t, filepath.Join(t.TempDir(), "inbox.json"), func() time.Time { return srcNow })
	dst := openFile(t, filepath.Join(t.TempDir(), "inbox.json"), func() time.Time { return dstNow })
	deliverytest.Done(t, src, "+1", "old")
	srcNow = t0.Add(6 * 24 * time.Hour)
	deliverytest.Done(t, src, "+2", "new")
	dstNow = srcNow
	if n, h, err := delivery.Move(context.Background(), src, dst, &delivery.Local{}); err != nil || n != 0 || h != 2 {
		t.Fatalf("Move = %d, %d, %v; want 2 ids recorded", n, h, err)
	}
	for _, tt := range []struct {
		at       time.Time
		old, new bool
	}{
		{t0.Add(delivery.HandledFor - time.Second), true, true},
		{t0.Add(delivery.HandledFor), false, true},
		{srcNow.Add(delivery.HandledFor), false, false},
	} {
		dstNow = tt.at
		if old, new := deliverytest.HandledIDs(t, dst)["old"].ID != "", deliverytest.HandledIDs(t, dst)["new"].ID != ""; old != tt.old || new != tt.new {
			t.Errorf("at %v the target knows old %v, new %v; want %v, %v", tt.at, old, new, tt.old, tt.new)
		}
	}
	dstNow = srcNow
	if _, handled := deliverytest.Erase(t, dst, "+2"); handled != 1 {
		t.Errorf("Erase(+2) on the target removed %d ids, want new", handled)
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
		n, _, err := delivery.Move(context.Background(), src, dst, &lock)
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
