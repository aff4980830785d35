package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
)

func TestSweep(t *testing.T) {
	s, path := open(t, nil)
	ctx := context.Background()
	cutoff := storetest.Start
	saves := []struct {
		phone string
		at    time.Time
		swept bool
	}{
		{"+1", cutoff.Add(-time.Hour), true},
		{"+2", cutoff, true}, // at the cutoff: swept, as Expire does
		{"+3", cutoff.Add(time.Nanosecond), false},
		{"+4", cutoff.Add(time.Hour), false},
	}
	for _, sv := range saves {
		for i := range 3 {
			if err := s.Append(ctx, sv.phone, turn(fmt.Sprint("q", i), "a"), sv.at, lim); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := s.Sweep(ctx, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("Sweep deleted %d conversations, want 2", n)
	}
	for _, sv := range saves {
		_, err := s.Load(ctx, sv.phone)
		if err != nil && !errors.Is(err, conversation.ErrNotFound) {
			t.Fatal(err)
		}
		if gone := err != nil; gone != sv.swept {
			t.Errorf("%s last active %v: Load err = %v, want swept %v", sv.phone, sv.at.Sub(cutoff), err, sv.swept)
		}
	}
	var rows int
	if err := rawDB(t, path).QueryRow(`SELECT count(*) FROM turns`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 6 {
		t.Errorf("%d turn rows left, want 6: the swept conversations' turns stayed", rows)
	}
	if n, err := s.Sweep(ctx, cutoff); n != 0 || err != nil {
		t.Errorf("second Sweep = %d, %v; want 0, nil", n, err)
	}
}

// TestSweepBatches sweeps more conversations than one batch holds.
func TestSweepBatches(t *testing.T) {
	s, path := open(t, nil)
	const old, fresh = 1234, 10
	populate(t, rawDB(t, path), old, 2, storetest.Start.Add(-time.Hour))
	ctx := context.Background()
	for i := range fresh {
		if err := s.Append(ctx, fmt.Sprintf("+2%09d", i), turn("hi", "hello"), storetest.Start, lim); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Sweep(ctx, storetest.Start.Add(-time.Minute))
	if err != nil || n != old {
		t.Fatalf("Sweep = %d, %v; want %d, nil", n, err, old)
	}
	sums, err := s.List(ctx)
	if err != nil || len(sums) != fresh {
		t.Fatalf("List after Sweep: %d conversations (err %v), want %d", len(sums), err, fresh)
	}
}

func TestSweepThroughMemory(t *testing.T) {
	s, _ := open(t, nil)
	clock := storetest.NewClock(storetest.Start)
	mem, err := conversation.New(s, &conversation.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("hi", "hello")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(conversation.DefaultTimeout + time.Second)
	if n, err := mem.Sweep(ctx); n != 1 || err != nil {
		t.Fatalf("Memory.Sweep = %d, %v; want 1, nil", n, err)
	}
}

// TestSweepAtTheBoundary sweeps through a Memory, as the server does: a
// conversation exactly at the timeout is not expired (History would still
// serve it) and stays; one nanosecond later it goes.
func TestSweepAtTheBoundary(t *testing.T) {
	s, _ := open(t, nil)
	clock := storetest.NewClock(storetest.Start)
	mem, err := conversation.New(s, &conversation.Options{Timeout: time.Minute, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := func(d time.Duration) time.Time { return storetest.Start.Add(d) }
	for phone, last := range map[string]time.Time{
		"+1": at(-time.Hour),
		"+2": at(-time.Minute), // exactly the timeout: not expired yet
		"+3": at(0),
	} {
		if err := s.Append(ctx, phone, turn("hi", "hello"), last, lim); err != nil {
			t.Fatal(err)
		}
	}
	sweep := func(want int) {
		t.Helper()
		if n, err := mem.Sweep(ctx); n != want || err != nil {
			t.Fatalf("Sweep at %v = %d, %v; want %d, nil", clock.Now().Sub(storetest.Start), n, err, want)
		}
	}
	present := func(phone string, want bool) {
		t.Helper()
		_, err := s.Load(ctx, phone)
		switch {
		case want && err != nil:
			t.Fatalf("%s: Load err = %v, want it still stored", phone, err)
		case !want && !errors.Is(err, conversation.ErrNotFound):
			t.Fatalf("%s: Load err = %v, want ErrNotFound", phone, err)
		}
	}
	sweep(1)
	present("+1", false)
	present("+2", true)
	if h, err := mem.History(ctx, "+2"); err != nil || len(h) != 2 {
		t.Fatalf("History at the timeout = %d messages, %v; want the conversation", len(h), err)
	}
	clock.Advance(time.Nanosecond)
	sweep(1)
	present("+2", false)
	present("+3", true)
}
