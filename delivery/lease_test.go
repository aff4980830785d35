package delivery_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
)

// fakeLeases holds leases in memory, with the rules of a store's: a lease
// is taken when free, renewed and released only by its token.
type fakeLeases struct {
	mu       sync.Mutex
	holder   map[string]string
	released int
	renewErr error
}

func (f *fakeLeases) lease() *delivery.Lease {
	return &delivery.Lease{
		Name: "fake", TTL: 30 * time.Millisecond, WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond,
		Log: quiet,
		Take: func(ctx context.Context, key, token string) (bool, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.holder[key] != "" {
				return false, nil
			}
			f.holder[key] = token
			return true, nil
		},
		Renew: func(ctx context.Context, key, token string) (bool, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.renewErr != nil {
				return false, f.renewErr
			}
			return f.holder[key] == token, nil
		},
		Release: func(ctx context.Context, key, token string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.holder[key] == token {
				delete(f.holder, key)
			}
			f.released++
			return nil
		},
	}
}

// TestLeaseWaitsAndReleases: a second holder waits until the first
// releases; a release is made once however often unlock is called.
func TestLeaseWaitsAndReleases(t *testing.T) {
	f := &fakeLeases{holder: map[string]string{}}
	l := f.lease()
	held, unlock, err := l.Lock(context.Background(), "k", "a")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, unlock2, err := l.Lock(context.Background(), "k", "b")
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second Lock returned (%v) while the first holds the lease", err)
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("second Lock after the release: %v", err)
	}
	if held.Err() == nil || context.Cause(held) == delivery.ErrLockLost {
		t.Errorf("held after unlock: err %v, cause %v; want ended without ErrLockLost", held.Err(), context.Cause(held))
	}
	if f.released != 2 {
		t.Errorf("%d releases, want one per holder", f.released)
	}

	ctx, cancel := context.WithCancel(context.Background())
	_, unlock, err = l.Lock(ctx, "k", "c")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	cancel()
	if _, _, err := l.Lock(ctx, "k", "d"); !errors.Is(err, context.Canceled) {
		t.Errorf("Lock with ctx done while held = %v, want context.Canceled", err)
	}
}

// TestLeaseLost: a lease taken over by another, or one that cannot be
// renewed before it runs out, ends held with ErrLockLost.
func TestLeaseLost(t *testing.T) {
	for name, cut := range map[string]func(f *fakeLeases){
		"taken over":   func(f *fakeLeases) { f.mu.Lock(); f.holder["k"] = "other"; f.mu.Unlock() },
		"cannot renew": func(f *fakeLeases) { f.mu.Lock(); f.renewErr = errors.New("store down"); f.mu.Unlock() },
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeLeases{holder: map[string]string{}}
			held, unlock, err := f.lease().Lock(context.Background(), "k", "a")
			if err != nil {
				t.Fatal(err)
			}
			defer unlock()
			cut(f)
			select {
			case <-held.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("held did not end after the lease was lost")
			}
			if cause := context.Cause(held); cause != delivery.ErrLockLost {
				t.Errorf("cause = %v, want ErrLockLost", cause)
			}
		})
	}
}

// TestLeaseTakeLostIsReleased: a take whose answer was lost (applied, but
// reported failed, as when the store crashes) is released in the
// background, so that the sender does not wait a TTL for nobody.
func TestLeaseTakeLostIsReleased(t *testing.T) {
	f := &fakeLeases{holder: map[string]string{}}
	l := f.lease()
	take := l.Take
	var lost sync.Once
	l.Take = func(ctx context.Context, key, token string) (bool, error) {
		ok, err := take(ctx, key, token)
		failed := false
		lost.Do(func() { failed = true })
		if failed {
			return false, errors.New("connection reset")
		}
		return ok, err
	}
	if _, _, err := l.Lock(context.Background(), "k", "a"); err == nil {
		t.Fatal("Lock with its take's answer lost succeeded")
	}
	// The fake's leases never run out: only the release frees it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, unlock, err := l.Lock(ctx, "k", "b")
	if err != nil {
		t.Fatalf("Lock after a take whose answer was lost: %v", err)
	}
	unlock()
}
