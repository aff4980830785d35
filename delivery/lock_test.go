package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
)

func TestLocalOrder(t *testing.T) {
	var l delivery.Local
	ctx := context.Background()
	_, unlock, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, u, err := l.Lock(ctx, "a")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			u()
		}()
		deliverytest.WaitQueued(t, &l, "a", i+2)
	}
	// Another key is not held up.
	_, ub, err := l.Lock(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	ub()
	unlock()
	wg.Wait()
	if fmt.Sprint(order) != "[0 1 2 3 4]" {
		t.Errorf("order = %v, want arrival order", order)
	}
	unlock() // a second call is harmless
}

func TestLocalCancel(t *testing.T) {
	var l delivery.Local
	_, unlock, _ := l.Lock(context.Background(), "a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, _, err := l.Lock(ctx, "a")
		done <- err
	}()
	deliverytest.WaitQueued(t, &l, "a", 2)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	unlock()
	if n := l.Queued("a"); n != 0 {
		t.Errorf("%d left queued", n)
	}
	_, u, err := l.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	u()
}

func TestLocalHeld(t *testing.T) {
	var m delivery.Local
	ctx := context.Background()
	held, unlock, err := m.Lock(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	if held.Err() != nil {
		t.Fatal("a Local lock is lost while held")
	}
	// Another key is free while +1 is held.
	_, unlock2, err := m.Lock(ctx, "+2")
	if err != nil {
		t.Fatal(err)
	}
	unlock2()

	// The same key waits, and gives up with its context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := m.Lock(cctx, "+1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock of a held key with a cancelled context = %v", err)
	}

	got := make(chan struct{})
	go func() {
		_, u, err := m.Lock(ctx, "+1")
		if err == nil {
			u()
		}
		close(got)
	}()
	unlock()
	unlock() // a second unlock is harmless
	<-got
	if held.Err() == nil {
		t.Error("held is not done after unlock")
	}

	// Many holders in turn: a counter without its own lock stays right.
	var wg sync.WaitGroup
	n := 0
	for range 50 {
		wg.Go(func() {
			_, u, err := m.Lock(ctx, "+3")
			if err != nil {
				t.Error(err)
				return
			}
			n++
			u()
		})
	}
	wg.Wait()
	if n != 50 {
		t.Errorf("n = %d, want 50", n)
	}
}
