package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// RunReplacer runs the tests of [conversation.Replacer] against the storage
// newStorage makes; its stores must implement it.
func RunReplacer(t *testing.T, newStorage NewStorage) {
	tests := []struct {
		name string
		fn   func(t *testing.T, r *replacerEnv)
	}{
		{"IntoEmpty", testReplaceIntoEmpty},
		{"OverOlder", testReplaceOverOlder},
		{"KeepsNewer", testReplaceKeepsNewer},
		{"SameTime", testReplaceSameTime},
		{"Persisted", testReplacePersisted},
		{"RacingAppend", testReplaceRacingAppend},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &env{t: t, open: newStorage(t), clock: NewClock(Start)}
			e.reopen(nil)
			r := &replacerEnv{env: e}
			r.reload()
			tt.fn(t, r)
		})
	}
}

type replacerEnv struct {
	*env
	r conversation.Replacer
}

// reload reopens the storage and checks the store is a Replacer.
func (r *replacerEnv) reload() {
	r.t.Helper()
	if r.r != nil {
		r.reopen(nil)
	}
	rep, ok := r.store.(conversation.Replacer)
	if !ok {
		r.t.Fatalf("%T does not implement conversation.Replacer", r.store)
	}
	r.r = rep
}

func (r *replacerEnv) replace(c conversation.Conversation) bool {
	r.t.Helper()
	ok, err := r.r.Replace(context.Background(), c, time.Hour)
	if err != nil {
		r.t.Fatalf("Replace: %v", err)
	}
	return ok
}

func (r *replacerEnv) load(phone string) conversation.Conversation {
	r.t.Helper()
	c, err := r.store.Load(context.Background(), phone)
	if err != nil {
		r.t.Fatalf("Load(%q): %v", phone, err)
	}
	return c
}

// turns returns n text turns whose user texts are label0, label1, ...
func turns(label string, n int) []conversation.Turn {
	out := make([]conversation.Turn, n)
	for i := range out {
		out[i] = conversation.Turn{Messages: TextTurn(fmt.Sprint(label, i), "ok")}
	}
	return out
}

// checkConv fails unless got holds want's last activity and exactly its
// turns, byte for byte.
func checkConv(t *testing.T, got, want conversation.Conversation) {
	t.Helper()
	if !got.LastActive.Equal(want.LastActive) {
		t.Fatalf("last active %v, want %v", got.LastActive, want.LastActive)
	}
	assertMessages(t, got.Messages(), want.Messages())
}

const replPhone = "+14155551234"

func testReplaceIntoEmpty(t *testing.T, r *replacerEnv) {
	c := conversation.Conversation{Phone: replPhone, LastActive: Start, Turns: turns("q", 3)}
	if !r.replace(c) {
		t.Fatal("Replace into an empty store returned false")
	}
	checkConv(t, r.load(replPhone), c)
	// Through a Memory too: History serves exactly the copied turns.
	assertMessages(t, r.history(replPhone), c.Messages())
	if _, err := r.store.Load(context.Background(), "+2"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("another phone: err = %v, want ErrNotFound", err)
	}
}

func testReplaceOverOlder(t *testing.T, r *replacerEnv) {
	r.save(replPhone, TextTurn("old0", "a")...)
	r.clock.Advance(time.Second)
	r.save(replPhone, TextTurn("old1", "a")...)
	c := conversation.Conversation{Phone: replPhone, LastActive: Start.Add(time.Minute), Turns: turns("new", 1)}
	if !r.replace(c) {
		t.Fatal("Replace over an older conversation returned false")
	}
	checkConv(t, r.load(replPhone), c) // no old turn left
	r.clock.Advance(time.Minute)
	r.save(replPhone, TextTurn("after", "a")...)
	if got := r.load(replPhone); len(got.Turns) != 2 {
		t.Fatalf("a save after Replace left %d turns, want 2", len(got.Turns))
	}
}

func testReplaceKeepsNewer(t *testing.T, r *replacerEnv) {
	r.clock.Advance(time.Minute)
	r.save(replPhone, TextTurn("newer", "a")...)
	want := r.load(replPhone)
	for _, d := range []time.Duration{time.Second, time.Microsecond} {
		c := conversation.Conversation{Phone: replPhone, LastActive: want.LastActive.Add(-d), Turns: turns("copy", 2)}
		if r.replace(c) {
			t.Fatalf("Replace %v older than the stored conversation returned true", d)
		}
		checkConv(t, r.load(replPhone), want)
	}
}

func testReplaceSameTime(t *testing.T, r *replacerEnv) {
	// A copy interrupted half way (by a store without Replace) leaves the
	// copy's last activity with part of its turns; a copy at the same time
	// completes it.
	r.save(replPhone, TextTurn("q0", "ok")...)
	c := conversation.Conversation{Phone: replPhone, LastActive: Start, Turns: turns("q", 3)}
	if !r.replace(c) {
		t.Fatal("Replace at the stored last activity returned false")
	}
	checkConv(t, r.load(replPhone), c)
}

func testReplacePersisted(t *testing.T, r *replacerEnv) {
	c := conversation.Conversation{Phone: replPhone, LastActive: Start, Turns: turns("q", 2)}
	r.replace(c)
	r.reload()
	checkConv(t, r.load(replPhone), c)
}

// testReplaceRacingAppend runs a Replace with an older copy against an
// Append, as a migration into a store a server already uses would: the
// appended turn is never lost and the result is one of the two orders.
func testReplaceRacingAppend(t *testing.T, r *replacerEnv) {
	ctx := context.Background()
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 100}
	for i := range 20 {
		phone := fmt.Sprintf("+1%03d", i)
		at := Start.Add(time.Duration(i) * time.Minute)
		if err := r.store.Append(ctx, phone, conversation.Turn{Messages: TextTurn("before", "a")}, at, lim); err != nil {
			t.Fatal(err)
		}
		c := conversation.Conversation{Phone: phone, LastActive: at.Add(time.Second), Turns: turns("copy", 2)}
		var wg sync.WaitGroup
		var appendErr, replaceErr error
		wg.Go(func() {
			appendErr = r.store.Append(ctx, phone, conversation.Turn{Messages: TextTurn("live", "a")}, at.Add(2*time.Second), lim)
		})
		wg.Go(func() { _, replaceErr = r.r.Replace(ctx, c, time.Hour) })
		wg.Wait()
		if appendErr != nil || replaceErr != nil {
			t.Fatalf("append err %v, replace err %v", appendErr, replaceErr)
		}
		var texts []string
		for _, tr := range r.load(phone).Turns {
			texts = append(texts, tr.Messages[0].Text())
		}
		got := fmt.Sprint(texts)
		if got != "[copy0 copy1 live]" && got != "[before live]" {
			t.Fatalf("round %d: turns %s; want the copy then the live turn, or the live turn kept over the older copy", i, got)
		}
	}
}
