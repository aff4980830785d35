package whatsapp_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/mombot/mombot/whatsapp"
)

func TestKeyMutex(t *testing.T) {
	var m whatsapp.KeyMutex
	ctx := context.Background()
	held, unlock, err := m.Lock(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	if held.Err() != nil {
		t.Fatal("a KeyMutex lock is lost while held")
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
