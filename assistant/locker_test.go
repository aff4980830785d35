package assistant_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
)

// Two messages from one person are handled one after the other, in order;
// another person's message is not held up by them.
func TestOneSenderAtATime(t *testing.T) {
	e := newEnv(t, nil)
	release := make(chan struct{})
	started := make(chan string, 10)
	e.srv.Respond(func(r anthropictest.Request) anthropictest.Response {
		msgs := sent(t, r)
		last := string(msgs[len(msgs)-1].Content)
		started <- last
		if len(msgs) == 1 && strings.Contains(last, "first") {
			<-release
		}
		return anthropictest.Text("ok")
	})
	var wg sync.WaitGroup
	handle := func(from, text string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.handle(from, text); err != nil {
				t.Error(err)
			}
		}()
	}
	handle(erin, "first")
	if got := <-started; !strings.Contains(got, "first") {
		t.Fatalf("started %s", got)
	}
	handle(erin, "second")
	deliverytest.WaitQueued(t, e.a.Locker(), erin, 2)
	handle(jason, "other")
	if got := <-started; !strings.Contains(got, "other") {
		t.Fatalf("Jason waited for Erin: started %s", got)
	}
	close(release)
	wg.Wait()
	// Erin's second message saw her first turn.
	h := e.history(erin)
	if len(h) != 4 || !strings.Contains(string(h[0].Content), "first") || !strings.Contains(string(h[2].Content), "second") {
		t.Errorf("Erin's history = %s", dump(h))
	}
}

// A message whose caller holds the sender's lock and hands it over
// (HandleLocked) is handled under that lock, not after it; and once that
// lock is lost, the assistant stops and saves nothing.
func TestHeldLockPassedDown(t *testing.T) {
	e := newEnv(t, nil)
	held, unlock, err := e.a.Locker().Lock(context.Background(), erin)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Enqueue(anthropictest.Text("ok"))
	done := make(chan error, 1)
	go func() {
		_, err := e.a.HandleLocked(context.Background(), held, assistant.Inbound{From: erin, Text: "hi"})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Handle waited for the lock its caller holds")
	}
	if h := e.history(erin); len(h) != 2 {
		t.Fatalf("history has %d messages, want the turn saved", len(h))
	}

	lost, lose := context.WithCancelCause(context.Background())
	lose(delivery.ErrLockLost)
	e.srv.Enqueue(anthropictest.Text("never"))
	if _, err := e.a.HandleLocked(context.Background(), lost, assistant.Inbound{From: erin, Text: "again"}); err == nil {
		t.Error("Handle under a lost lock succeeded")
	}
	if h := e.history(erin); len(h) != 2 {
		t.Errorf("history has %d messages after a lost lock, want the earlier turn only", len(h))
	}
	if _, err := e.a.HandleLocked(context.Background(), nil, assistant.Inbound{From: erin, Text: "no lock"}); err == nil {
		t.Error("HandleLocked without a lock succeeded")
	}
	if h := e.history(erin); len(h) != 2 {
		t.Errorf("history has %d messages after a message without a lock, want the earlier turn only", len(h))
	}
	unlock()
}
