package assistant_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
)

func TestLocalLockerOrder(t *testing.T) {
	var l assistant.LocalLocker
	ctx := context.Background()
	unlock, err := l.Lock(ctx, "a")
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
			u, err := l.Lock(ctx, "a")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			u()
		}()
		waitQueued(t, &l, "a", i+2)
	}
	// Another key is not held up.
	ub, err := l.Lock(ctx, "b")
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

// waitQueued waits until n callers hold or wait for key's lock.
func waitQueued(t *testing.T, l *assistant.LocalLocker, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for assistant.QueueLen(l, key) < n {
		if time.Now().After(deadline) {
			t.Fatalf("never %d queued on %q", n, key)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLocalLockerCancel(t *testing.T) {
	var l assistant.LocalLocker
	unlock, _ := l.Lock(context.Background(), "a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := l.Lock(ctx, "a")
		done <- err
	}()
	waitQueued(t, &l, "a", 2)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	unlock()
	if n := assistant.QueueLen(&l, "a"); n != 0 {
		t.Errorf("%d left queued", n)
	}
	u, err := l.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	u()
}

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
	waitQueued(t, e.a.Locker(), erin, 2)
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
