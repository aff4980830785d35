// Package deliverytest is the conformance suite of delivery.Inbox: every
// implementation (Volatile, File, the Redis and PostgreSQL ones) runs it,
// as slog handlers run testing/slogtest, so that they keep one contract;
// RunLocker is the shared Lockers' (Redis, PostgreSQL). Its helpers serve
// the tests of delivery's other types too, and of their callers.
package deliverytest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
)

// Msg returns a message of key with id, whose body names both.
func Msg(key, id string) delivery.Message {
	return delivery.Message{ID: id, Key: key, Body: fmt.Appendf(nil, `{"id":%q,"text":"hello from %s"}`, id, key)}
}

// Run runs every case against a new, empty Inbox from open for each; a
// failure says which rule of the contract was broken.
func Run(t *testing.T, open func(t *testing.T) delivery.Inbox) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Helper()
			c.run(t, open(t))
		})
	}
}

// RunDurable runs the cases of a durable Inbox, besides Run's: open
// returns a new, empty Inbox and a function that opens another on the
// same data, as a process started again would.
func RunDurable(t *testing.T, open func(t *testing.T) (in delivery.Inbox, reopen func() delivery.Inbox)) {
	for _, c := range durableCases {
		t.Run(c.name, func(t *testing.T) {
			t.Helper()
			in, reopen := open(t)
			c.run(t, in, reopen)
		})
	}
}

var durableCases = []struct {
	name string
	run  func(t *testing.T, in delivery.Inbox, reopen func() delivery.Inbox)
}{
	{"the Sending mark is kept with the queue: another Inbox on the data finds it, also after a write of another sender", func(t *testing.T, in delivery.Inbox, reopen func() delivery.Inbox) {
		Push(t, in, Msg("+1", "a1"), Msg("+1", "a2"), Msg("+2", "b1"))
		Sending(t, in, "+1", "a1")
		Erase(t, in, "+2")
		again := reopen()
		if m, _ := Peek(t, again, "+1"); m.ID != "a1" || !m.Sending {
			t.Fatalf("head of +1 in another Inbox = %s, Sending %v; want a1 marked", m.ID, m.Sending)
		}
		Done(t, again, "+1", "a1")
		if m, _ := Peek(t, reopen(), "+1"); m.ID != "a2" || m.Sending {
			t.Errorf("head of +1 after Done(a1) = %s, Sending %v; want a2 unmarked", m.ID, m.Sending)
		}
	}},
}

var cases = []struct {
	name string
	run  func(t *testing.T, in delivery.Inbox)
}{
	{"an empty inbox has no keys and no head", func(t *testing.T, in delivery.Inbox) {
		if k := Keys(t, in); len(k) != 0 {
			t.Errorf("Keys = %q, want none", k)
		}
		if _, ok := Peek(t, in, "+14155551234"); ok {
			t.Error("Peek of an empty queue found a message")
		}
	}},
	{"each key's queue is first in, first out, and Peek removes nothing", func(t *testing.T, in delivery.Inbox) {
		Push(t, in, Msg("+1", "a1"))
		Push(t, in, Msg("+1", "a2"))
		Push(t, in, Msg("+2", "b1"))
		for range 2 {
			if m, _ := Peek(t, in, "+1"); m.ID != "a1" {
				t.Fatalf("head of +1 = %q, want a1", m.ID)
			}
		}
		if m, _ := Peek(t, in, "+2"); m.ID != "b1" || m.Key != "+2" {
			t.Fatalf("head of +2 = %+v, want b1", m)
		}
		if got := Keys(t, in); !slices.Equal(got, []string{"+1", "+2"}) {
			t.Errorf("Keys = %q, want [+1 +2]", got)
		}
	}},
	{"a message comes back as pushed, its body compacted", func(t *testing.T, in delivery.Inbox) {
		m := delivery.Message{ID: "x", Key: "+1", Body: []byte("{ \"text\": \"a <b> & c\",\n \"n\": 4 }")}
		Push(t, in, m)
		got, _ := Peek(t, in, "+1")
		if got.ID != "x" || got.Key != "+1" || string(got.Body) != `{"text":"a <b> & c","n":4}` {
			t.Errorf("Peek = %+v %s", got, got.Body)
		}
	}},
	{"a body that is not JSON is refused and nothing kept", func(t *testing.T, in delivery.Inbox) {
		if _, err := in.Push(context.Background(), delivery.Message{ID: "x", Key: "+1", Body: []byte("not json")}); err == nil {
			t.Error("Push of a body that is not JSON succeeded")
		}
		if k := Keys(t, in); len(k) != 0 {
			t.Errorf("Keys = %q after a refused push", k)
		}
	}},
	{"a batch is kept in order; its duplicates, waiting or earlier in it, are reported and skipped", func(t *testing.T, in delivery.Inbox) {
		Push(t, in, Msg("+1", "a1"))
		dup, err := in.Push(context.Background(), Msg("+1", "a2"), Msg("+2", "b1"), Msg("+1", "a1"), Msg("+1", "a3"), Msg("+1", "a2"))
		if err != nil {
			t.Fatalf("Push of a batch: %v", err)
		}
		if want := []bool{false, false, true, false, true}; !slices.Equal(dup, want) {
			t.Errorf("dup = %v, want %v", dup, want)
		}
		for _, id := range []string{"a1", "a2", "a3"} {
			if m, _ := Peek(t, in, "+1"); m.ID != id {
				t.Fatalf("head of +1 = %q, want %s", m.ID, id)
			}
			Done(t, in, "+1", id)
		}
		if _, ok := Peek(t, in, "+1"); ok {
			t.Error("a duplicate of the batch was queued")
		}
		if m, _ := Peek(t, in, "+2"); m.ID != "b1" {
			t.Errorf("head of +2 = %q, want b1", m.ID)
		}
	}},
	{"a batch with a body that is not JSON is refused and nothing of it kept", func(t *testing.T, in delivery.Inbox) {
		bad := delivery.Message{ID: "x", Key: "+2", Body: []byte("not json")}
		if _, err := in.Push(context.Background(), Msg("+1", "a1"), bad); err == nil {
			t.Error("Push of a batch with a body that is not JSON succeeded")
		}
		if k := Keys(t, in); len(k) != 0 {
			t.Errorf("Keys = %q after a refused batch", k)
		}
	}},
	{"a message waiting is a duplicate: nothing kept", func(t *testing.T, in delivery.Inbox) {
		Push(t, in, Msg("+1", "a1"))
		if !Dup(t, in, Msg("+1", "a1")) {
			t.Fatalf("second Push of a1: kept, want a duplicate")
		}
		Done(t, in, "+1", "a1")
		if _, ok := Peek(t, in, "+1"); ok {
			t.Error("the duplicate was queued")
		}
	}},
	{"Done removes the head and records it: a push of it is then a duplicate", func(t *testing.T, in delivery.Inbox) {
		Push(t, in, Msg("+1", "a1"))
		Push(t, in, Msg("+1", "a2"))
		Done(t, in, "+1", "a1")
		if m, _ := Peek(t, in, "+1"); m.ID != "a2" {
			t.Fatalf("head after Done(a1) = %q, want a2", m.ID)
		}
		if !Dup(t, in, Msg("+1", "a1")) {
			t.Errorf("Push of a handled message: kept, want a duplicate")
		}
		Done(t, in, "+1", "a2")
		if k := Keys(t, in); len(k) != 0 {
			t.Errorf("Keys = %q once every message is done", k)
		}
	}},
	{"Done removes only the head, and only if it is the message", func(t *testing.T, in delivery.Inbox) {
		Push(t, in, Msg("+1", "a1"))
		Push(t, in, Msg("+1", "a2"))
		Done(t, in, "+1", "a2") // not the head: a holder that lost its lock
		Done(t, in, "+3", "a1") // another key
		if m, _ := Peek(t, in, "+1"); m.ID != "a1" {
			t.Fatalf("head of +1 = %q after Done of others, want a1", m.ID)
		}
		Done(t, in, "+1", "a1")
		Done(t, in, "+1", "a1") // repeated: removes nothing else
		if m, _ := Peek(t, in, "+1"); m.ID != "a2" {
			t.Fatalf("head of +1 = %q after Done(a1) twice, want a2", m.ID)
		}
	}},
	{"Done of a message never pushed records it", func(t *testing.T, in delivery.Inbox) {
		Done(t, in, "+1", "m")
		if !Dup(t, in, Msg("+1", "m")) {
			t.Errorf("Push after Done: kept, want a duplicate")
		}
	}},
	{"Erase removes the sender's queue and handled ids, and nothing of another sender's", func(t *testing.T, in delivery.Inbox) {
		Done(t, in, "+1", "a0")
		Done(t, in, "+2", "b0")
		Push(t, in, Msg("+1", "a1"))
		Push(t, in, Msg("+1", "a2"))
		Push(t, in, Msg("+2", "b1"))
		queued, handled := Erase(t, in, "+1")
		if queued != 2 || handled != 1 {
			t.Errorf("Erase(+1) = %d queued, %d handled, want 2 and 1", queued, handled)
		}
		if _, ok := Peek(t, in, "+1"); ok {
			t.Error("a message of +1 is queued after Erase")
		}
		if got := Keys(t, in); !slices.Equal(got, []string{"+2"}) {
			t.Errorf("Keys after Erase(+1) = %q, want [+2]", got)
		}
		if m, _ := Peek(t, in, "+2"); m.ID != "b1" {
			t.Errorf("head of +2 after Erase(+1) = %q, want b1", m.ID)
		}
		if !Dup(t, in, Msg("+2", "b0")) {
			t.Errorf("Push of +2's handled b0 after Erase(+1): kept, want a duplicate")
		}
		if queued, handled := Erase(t, in, "+1"); queued != 0 || handled != 0 {
			t.Errorf("Erase(+1) again = %d queued, %d handled, want nothing", queued, handled)
		}
	}},
	{"an erased message is not known any more: pushed again, it is kept", func(t *testing.T, in delivery.Inbox) {
		Done(t, in, "+1", "a0")
		Push(t, in, Msg("+1", "a1"))
		Erase(t, in, "+1")
		Push(t, in, Msg("+1", "a0"))
		Push(t, in, Msg("+1", "a1"))
		if m, _ := Peek(t, in, "+1"); m.ID != "a0" {
			t.Errorf("head of +1 = %q, want a0", m.ID)
		}
	}},
	{"Erase of a sender with nothing stored removes nothing", func(t *testing.T, in delivery.Inbox) {
		Push(t, in, Msg("+2", "b1"))
		if queued, handled := Erase(t, in, "+1"); queued != 0 || handled != 0 {
			t.Errorf("Erase(+1) = %d queued, %d handled, want nothing", queued, handled)
		}
		if m, _ := Peek(t, in, "+2"); m.ID != "b1" {
			t.Errorf("head of +2 = %q, want b1", m.ID)
		}
	}},
	{"Sending marks the head only, and only if it is the message; Done removes it with its mark", func(t *testing.T, in delivery.Inbox) {
		Push(t, in, Msg("+1", "a1"), Msg("+1", "a2"))
		Sending(t, in, "+1", "a2") // not the head
		Sending(t, in, "+2", "a1") // another key, with no queue
		if m, _ := Peek(t, in, "+1"); m.ID != "a1" || m.Sending {
			t.Fatalf("head of +1 = %s, Sending %v after Sending of others; want a1 unmarked", m.ID, m.Sending)
		}
		Sending(t, in, "+1", "a1")
		Sending(t, in, "+1", "a1") // repeated: harmless
		for range 2 {
			if m, _ := Peek(t, in, "+1"); m.ID != "a1" || !m.Sending {
				t.Fatalf("head of +1 = %s, Sending %v; want a1 marked", m.ID, m.Sending)
			}
		}
		Done(t, in, "+1", "a1")
		if m, _ := Peek(t, in, "+1"); m.ID != "a2" || m.Sending {
			t.Errorf("head of +1 after Done(a1) = %s, Sending %v; want a2 unmarked", m.ID, m.Sending)
		}
		if !Dup(t, in, Msg("+1", "a1")) {
			t.Error("Push of a marked message done: kept, want a duplicate")
		}
	}},
	{"a message pushed is unmarked, whatever its Sending says", func(t *testing.T, in delivery.Inbox) {
		m := Msg("+1", "a1")
		m.Sending = true
		Push(t, in, m)
		if got, _ := Peek(t, in, "+1"); got.ID != "a1" || got.Sending {
			t.Errorf("head of +1 = %s, Sending %v; want a1 unmarked", got.ID, got.Sending)
		}
	}},
	{"Erase removes a marked message with its mark: pushed again, it is unmarked", func(t *testing.T, in delivery.Inbox) {
		Push(t, in, Msg("+1", "a1"))
		Sending(t, in, "+1", "a1")
		if queued, _ := Erase(t, in, "+1"); queued != 1 {
			t.Errorf("Erase(+1) = %d queued, want 1", queued)
		}
		Push(t, in, Msg("+1", "a1"))
		if m, _ := Peek(t, in, "+1"); m.ID != "a1" || m.Sending {
			t.Errorf("head of +1 = %s, Sending %v after Erase and a push; want a1 unmarked", m.ID, m.Sending)
		}
	}},
	{"Move takes a marked message unmarked, from the Inbox and to it", func(t *testing.T, in delivery.Inbox) {
		Push(t, in, Msg("+1", "a1"), Msg("+1", "a2"))
		Sending(t, in, "+1", "a1")
		other := &delivery.Volatile{}
		if n, _, err := delivery.Move(context.Background(), in, other, &delivery.Local{}); err != nil || n != 2 {
			t.Fatalf("Move from the Inbox = %d, %v; want 2 moved", n, err)
		}
		if m, _ := Peek(t, other, "+1"); m.ID != "a1" || m.Sending {
			t.Errorf("head of +1 moved out = %s, Sending %v; want a1 unmarked", m.ID, m.Sending)
		}
		if _, ok := Peek(t, in, "+1"); ok {
			t.Error("a message moved out is still queued")
		}
		Push(t, other, Msg("+2", "b1"))
		Sending(t, other, "+2", "b1")
		if _, _, err := delivery.Move(context.Background(), other, in, &delivery.Local{}); err != nil {
			t.Fatalf("Move to the Inbox: %v", err)
		}
		if m, _ := Peek(t, in, "+2"); m.ID != "b1" || m.Sending {
			t.Errorf("head of +2 moved in = %s, Sending %v; want b1 unmarked", m.ID, m.Sending)
		}
	}},
	{"HandledIDs lists each id handled, with its sender and when, and no id waiting", func(t *testing.T, in delivery.Inbox) {
		before := time.Now()
		Push(t, in, Msg("+1", "a1"), Msg("+1", "a2"))
		Done(t, in, "+1", "a1")
		Done(t, in, "+2", "b0") // never pushed
		after := time.Now()
		hs := HandledIDs(t, in)
		if len(hs) != 2 || hs["a1"].Key != "+1" || hs["b0"].Key != "+2" {
			t.Fatalf("HandledIDs = %v, want a1 of +1 and b0 of +2", hs)
		}
		for _, h := range hs {
			if h.At.Before(before.Add(-clockSlack)) || h.At.After(after.Add(clockSlack)) {
				t.Errorf("%s handled at %v, want between %v and %v", h.ID, h.At, before, after)
			}
		}
	}},
	{"RecordHandled records ids for their senders at their times: a push of one is a duplicate, Erase of its sender removes it", func(t *testing.T, in delivery.Inbox) {
		now := time.Now()
		want := []delivery.HandledID{{ID: "x", Key: "+1", At: now.Add(-6 * 24 * time.Hour)}, {ID: "y", Key: "+2", At: now.Add(-time.Hour)}}
		if n := RecordHandled(t, in, want...); n != 2 {
			t.Errorf("RecordHandled of 2 new ids = %d, want 2", n)
		}
		if !Dup(t, in, Msg("+1", "x")) || !Dup(t, in, Msg("+2", "y")) {
			t.Error("Push of an id recorded as handled: kept, want a duplicate")
		}
		hs := HandledIDs(t, in)
		for _, w := range want {
			// Kept with its time, the id expires HandledFor after it was
			// handled where it came from.
			if got := hs[w.ID]; got.Key != w.Key || !near(got.At, w.At) {
				t.Errorf("HandledIDs has %s as %+v, want %+v", w.ID, got, w)
			}
		}
		if queued, handled := Erase(t, in, "+1"); queued != 0 || handled != 1 {
			t.Errorf("Erase(+1) = %d queued, %d handled, want the recorded x", queued, handled)
		}
		Push(t, in, Msg("+1", "x"))
	}},
	{"RecordHandled leaves a message waiting queued, and an id handled already keeps its time, once", func(t *testing.T, in delivery.Inbox) {
		Push(t, in, Msg("+1", "a1"), Msg("+1", "a2"))
		before := time.Now()
		Done(t, in, "+3", "h")
		now := time.Now()
		n := RecordHandled(t, in,
			delivery.HandledID{ID: "a1", Key: "+1", At: now.Add(-time.Hour)},
			delivery.HandledID{ID: "a2", Key: "+1", At: now.Add(-time.Hour)},
			delivery.HandledID{ID: "h", Key: "+3", At: now.Add(-48 * time.Hour)},
			delivery.HandledID{ID: "n", Key: "+4", At: now.Add(-time.Hour)},
			delivery.HandledID{ID: "n", Key: "+4", At: now.Add(-2 * time.Hour)})
		if n != 1 {
			t.Errorf("RecordHandled = %d, want 1: only n is new, once", n)
		}
		if m, _ := Peek(t, in, "+1"); m.ID != "a1" {
			t.Fatalf("head of +1 = %q after RecordHandled of its messages, want a1 still waiting", m.ID)
		}
		if got := Keys(t, in); !slices.Equal(got, []string{"+1"}) {
			t.Errorf("Keys = %q, want [+1]", got)
		}
		hs := HandledIDs(t, in)
		if len(hs) != 2 || hs["h"].At.Before(before.Add(-clockSlack)) || !near(hs["n"].At, now.Add(-time.Hour)) {
			t.Errorf("HandledIDs = %v; want h at its Done and n an hour ago, and neither message waiting", hs)
		}
		Done(t, in, "+1", "a1")
		if m, _ := Peek(t, in, "+1"); m.ID != "a2" {
			t.Errorf("head of +1 after Done(a1) = %q, want a2", m.ID)
		}
	}},
	{"RecordHandled skips an id handled HandledFor ago or earlier, and takes a time after now as now", func(t *testing.T, in delivery.Inbox) {
		now := time.Now()
		n := RecordHandled(t, in,
			delivery.HandledID{ID: "old", Key: "+1", At: now.Add(-delivery.HandledFor - time.Minute)},
			delivery.HandledID{ID: "later", Key: "+1", At: now.Add(time.Hour)})
		if n != 1 {
			t.Errorf("RecordHandled = %d, want 1", n)
		}
		if hs := HandledIDs(t, in); len(hs) != 1 || hs["later"].At.After(time.Now().Add(clockSlack)) {
			t.Errorf("HandledIDs = %v, want only later, handled no later than now", hs)
		}
		Push(t, in, Msg("+1", "old"))
	}},
	{"an id without a sender (from mombot v0.1.0) is recorded, listed without one, and a duplicate", func(t *testing.T, in delivery.Inbox) {
		at := time.Now().Add(-time.Hour)
		if n := RecordHandled(t, in, delivery.HandledID{ID: "z", At: at}); n != 1 {
			t.Errorf("RecordHandled = %d, want 1", n)
		}
		if !Dup(t, in, Msg("+1", "z")) {
			t.Error("Push of z: kept, want a duplicate")
		}
		if h := HandledIDs(t, in)["z"]; h.ID != "z" || h.Key != "" || !near(h.At, at) {
			t.Errorf("HandledIDs has z as %+v, want no sender and an hour ago", h)
		}
	}},
	{"Move carries the ids handled with their senders, from the Inbox and to it", func(t *testing.T, in delivery.Inbox) {
		Done(t, in, "+1", "h1")
		other := &delivery.Volatile{}
		if moved, handled, err := delivery.Move(context.Background(), in, other, &delivery.Local{}); err != nil || moved != 0 || handled != 1 {
			t.Fatalf("Move from the Inbox = %d, %d, %v; want 1 id handled", moved, handled, err)
		}
		if _, handled := Erase(t, other, "+1"); handled != 1 {
			t.Errorf("Erase(+1) in the target removed %d ids, want h1", handled)
		}
		Done(t, other, "+2", "h2")
		Push(t, other, Msg("+2", "w"))
		if moved, handled, err := delivery.Move(context.Background(), other, in, &delivery.Local{}); err != nil || moved != 1 || handled != 1 {
			t.Fatalf("Move to the Inbox = %d, %d, %v; want w moved and h2 recorded (w, handled in the source, waits in the Inbox)", moved, handled, err)
		}
		if !Dup(t, in, Msg("+2", "h2")) {
			t.Error("Push of h2 to the Inbox after Move: kept, want a duplicate")
		}
		if m, _ := Peek(t, in, "+2"); m.ID != "w" {
			t.Errorf("head of +2 = %q, want w waiting", m.ID)
		}
	}},
	{"concurrent pushes keep each key's order", func(t *testing.T, in delivery.Inbox) {
		var wg sync.WaitGroup
		for k := range 4 {
			wg.Go(func() {
				for i := range 5 {
					Push(t, in, Msg(fmt.Sprintf("+%d", k), fmt.Sprintf("%d-%d", k, i)))
				}
			})
		}
		wg.Wait()
		for k := range 4 {
			key := fmt.Sprintf("+%d", k)
			for i := range 5 {
				want := fmt.Sprintf("%d-%d", k, i)
				if m, _ := Peek(t, in, key); m.ID != want {
					t.Fatalf("message %d of %s = %q, want %q", i, key, m.ID, want)
				}
				Done(t, in, key, want)
			}
		}
	}},
}

// WaitQueued waits until n callers hold or wait for key's lock in l,
// failing the test after 5 seconds.
func WaitQueued(t *testing.T, l *delivery.Local, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for l.Queued(key) < n {
		if time.Now().After(deadline) {
			t.Fatalf("never %d queued on %q", n, key)
		}
		time.Sleep(time.Millisecond)
	}
}

// Push pushes ms in one batch, failing the test on an error or a
// duplicate.
func Push(t testing.TB, in delivery.Inbox, ms ...delivery.Message) {
	t.Helper()
	dup, err := in.Push(context.Background(), ms...)
	if err != nil {
		t.Fatalf("Push of %d messages: %v", len(ms), err)
	}
	for i, d := range dup {
		if d {
			t.Fatalf("Push(%s, %s): a duplicate", ms[i].Key, ms[i].ID)
		}
	}
}

// Dup pushes m and reports whether it was a duplicate, failing the test
// on an error.
func Dup(t *testing.T, in delivery.Inbox, m delivery.Message) bool {
	t.Helper()
	dup, err := in.Push(context.Background(), m)
	if err != nil {
		t.Fatalf("Push(%s, %s): %v", m.Key, m.ID, err)
	}
	if len(dup) != 1 {
		t.Fatalf("Push of one message reported %d duplicates", len(dup))
	}
	return dup[0]
}

// Peek returns the head of key's queue, failing the test on an error.
func Peek(t *testing.T, in delivery.Inbox, key string) (delivery.Message, bool) {
	t.Helper()
	m, ok, err := in.Peek(context.Background(), key)
	if err != nil {
		t.Fatalf("Peek(%s): %v", key, err)
	}
	return m, ok
}

// Done calls Done, failing the test on an error.
func Done(t *testing.T, in delivery.Inbox, key, id string) {
	t.Helper()
	if err := in.Done(context.Background(), key, id); err != nil {
		t.Fatalf("Done(%s, %s): %v", key, id, err)
	}
}

// Sending calls Sending, failing the test on an error.
func Sending(t *testing.T, in delivery.Inbox, key, id string) {
	t.Helper()
	if err := in.Sending(context.Background(), key, id); err != nil {
		t.Fatalf("Sending(%s, %s): %v", key, id, err)
	}
}

// Erase calls Erase, failing the test on an error.
func Erase(t *testing.T, in delivery.Inbox, key string) (queued, handled int) {
	t.Helper()
	queued, handled, err := in.Erase(context.Background(), key)
	if err != nil {
		t.Fatalf("Erase(%s): %v", key, err)
	}
	return queued, handled
}

// Keys returns the keys, sorted, failing the test on an error.
func Keys(t *testing.T, in delivery.Inbox) []string {
	t.Helper()
	k, err := in.Keys(context.Background())
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	slices.Sort(k)
	return k
}

// clockSlack is how far apart the test's clock and the Inbox's (Redis's,
// the database's) may be, and how much a File's seconds lose.
const clockSlack = 2 * time.Second

// near reports whether a and b are within clockSlack.
func near(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -clockSlack && d < clockSlack
}

// HandledIDs returns the ids handled by id, failing the test on an error
// or an id listed twice.
func HandledIDs(t *testing.T, in delivery.Inbox) map[string]delivery.HandledID {
	t.Helper()
	hs, err := in.HandledIDs(context.Background())
	if err != nil {
		t.Fatalf("HandledIDs: %v", err)
	}
	out := map[string]delivery.HandledID{}
	for _, h := range hs {
		if _, ok := out[h.ID]; ok {
			t.Errorf("HandledIDs lists %s twice", h.ID)
		}
		out[h.ID] = h
	}
	return out
}

// RecordHandled calls RecordHandled, failing the test on an error.
func RecordHandled(t *testing.T, in delivery.Inbox, hs ...delivery.HandledID) int {
	t.Helper()
	n, err := in.RecordHandled(context.Background(), hs...)
	if err != nil {
		t.Fatalf("RecordHandled: %v", err)
	}
	return n
}
