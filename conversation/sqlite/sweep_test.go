package sqlite_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
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

func TestBackgroundSweep(t *testing.T) {
	clock := storetest.NewClock(storetest.Start)
	logs := &syncBuffer{}
	s, _ := open(t, &sqlite.Options{
		SweepEvery: 5 * time.Millisecond,
		Timeout:    time.Minute,
		Now:        clock.Now,
		Logger:     slog.New(slog.NewTextHandler(logs, nil)),
	})
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
	waitGone(t, s, "+1")
	clock.Advance(time.Nanosecond)
	waitGone(t, s, "+2")
	if _, err := s.Load(ctx, "+3"); err != nil {
		t.Fatalf("the background sweep deleted an active conversation: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); !strings.Contains(l, "swept expired conversations") {
		t.Errorf("log = %q, want a report of the sweep", l)
	}
}

// waitGone waits for the background sweep to delete phone's conversation.
func waitGone(t *testing.T, s *sqlite.Store, phone string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := s.Load(context.Background(), phone); err != nil {
			return
		}
	}
	t.Fatalf("the background sweep did not delete %s", phone)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
