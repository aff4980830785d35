package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
	"github.com/mombot/mombot/delivery/postgres"
	"github.com/mombot/mombot/internal/pgtest"
)

func TestInboxConformance(t *testing.T) {
	deliverytest.Run(t, func(t *testing.T) delivery.Inbox { return newInbox(t, pgtest.Name(t)) })
}

func TestInboxDurable(t *testing.T) {
	deliverytest.RunDurable(t, func(t *testing.T) (delivery.Inbox, func() delivery.Inbox) {
		schema := pgtest.Name(t)
		return newInbox(t, schema), func() delivery.Inbox { return newInbox(t, schema) }
	})
}

// TestInboxShared pushes from two pools, as two replicas would, and
// drains from both, each peeking and calling Done under a lock: every
// message once, in the order pushed; a message one replica holds is a
// duplicate on the other, and so is one handled.
func TestInboxShared(t *testing.T) {
	schema := pgtest.Name(t)
	ins := []*postgres.Inbox{newInbox(t, schema), newInbox(t, schema)}
	const key = "+14155551234"
	for i := range 6 {
		deliverytest.Push(t, ins[i%2], deliverytest.Msg(key, fmt.Sprintf("m%d", i)))
	}
	if dup, err := ins[1].Push(context.Background(), deliverytest.Msg(key, "m0")); err != nil || !dup[0] {
		t.Errorf("a push on one replica of a message the other holds: %v, %v; want a duplicate", dup, err)
	}
	var mu sync.Mutex // the lock a drain holds
	var got []string
	var wg sync.WaitGroup
	for _, in := range ins {
		wg.Go(func() {
			for {
				mu.Lock()
				m, ok := deliverytest.Peek(t, in, key)
				if !ok {
					mu.Unlock()
					return
				}
				got = append(got, m.ID)
				deliverytest.Done(t, in, key, m.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if fmt.Sprint(got) != "[m0 m1 m2 m3 m4 m5]" {
		t.Errorf("drained %v, want each once in order", got)
	}
	if dup, err := ins[0].Push(context.Background(), deliverytest.Msg(key, "m3")); err != nil || !dup[0] {
		t.Errorf("a push of a handled message on the other replica: %v, %v; want a duplicate", dup, err)
	}
}

// TestInboxRedeliveryRace pushes each message from two replicas at once,
// as Meta's repeated deliveries arrive, while a third drains the queue:
// every message is kept once and answered once, in order, whether the
// repeat comes before, during or after its Done.
func TestInboxRedeliveryRace(t *testing.T) {
	schema := pgtest.Name(t)
	ins := []*postgres.Inbox{newInbox(t, schema), newInbox(t, schema), newInbox(t, schema)}
	const key, n = "+14155551234", 40
	var kept sync.Map
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			for i := range n {
				dup, err := ins[r].Push(context.Background(), deliverytest.Msg(key, fmt.Sprintf("m%02d", i)))
				switch {
				case err != nil:
					t.Error(err)
				case !dup[0]:
					if _, twice := kept.LoadOrStore(i, r); twice {
						t.Errorf("m%02d kept by both replicas", i)
					}
				}
			}
		})
	}
	var answered []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(answered) < n {
			m, ok := deliverytest.Peek(t, ins[2], key)
			if !ok {
				time.Sleep(time.Millisecond)
				continue
			}
			answered = append(answered, m.ID)
			deliverytest.Done(t, ins[2], key, m.ID)
		}
	}()
	wg.Wait()
	<-done
	for i, id := range answered {
		if want := fmt.Sprintf("m%02d", i); id != want {
			t.Fatalf("answer %d is %s, want %s: %v", i, id, want, answered)
		}
	}
	if k := deliverytest.Keys(t, ins[0]); len(k) != 0 {
		t.Errorf("Keys = %q once everything is answered", k)
	}
}
