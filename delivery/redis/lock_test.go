package redis_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	conversationredis "github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
	"github.com/mombot/mombot/delivery/redis"
	"github.com/mombot/mombot/internal/logtest"
	"github.com/mombot/mombot/internal/redistest"
	goredis "github.com/redis/go-redis/v9"
)

// newLocker returns a Locker on s's client and prefix, logging where s
// logs unless opts says otherwise.
func newLocker(t *testing.T, s *conversationredis.Store, opts *redis.LockerOptions) *redis.Locker {
	t.Helper()
	var o redis.LockerOptions
	if opts != nil {
		o = *opts
	}
	o.Prefix = s.Prefix()
	if o.Logger == nil {
		o.Logger = logOf(s)
	}
	l, err := redis.NewLocker(s.Client(), &o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func lockHeld(t *testing.T, l *redis.Locker, key string) (context.Context, func()) {
	t.Helper()
	held, unlock, err := l.Lock(context.Background(), key)
	if err != nil {
		t.Fatalf("Lock(%q): %v", key, err)
	}
	return held, unlock
}

// TestLocker runs delivery's locker suite on two Lockers with one prefix,
// each on a connection of its own, as two replicas hold them.
func TestLocker(t *testing.T) {
	deliverytest.RunLocker(t, func(t *testing.T) (a, b delivery.Locker) {
		prefix := redistest.Prefix(t)
		return newLocker(t, open(t, prefix, nil), nil), newLocker(t, open(t, prefix, nil), nil)
	})
}

// TestLockRenewed holds a lock for several TTLs: renewal keeps others out.
func TestLockRenewed(t *testing.T) {
	prefix := redistest.Prefix(t)
	l := newLocker(t, open(t, prefix, nil), &redis.LockerOptions{TTL: 300 * time.Millisecond})
	held, unlock := lockHeld(t, l, "a")
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	if _, _, err := l.Lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a lock held for four TTLs was taken by another: err = %v", err)
	}
	if held.Err() != nil {
		t.Fatalf("a lock renewed in time is reported lost: %v", context.Cause(held))
	}
	unlock()
	if held.Err() == nil {
		t.Fatal("held is not done after unlock")
	}
	if errors.Is(context.Cause(held), redis.ErrLockLost) {
		t.Fatal("a lock released is reported lost")
	}
	if n, _ := redistest.Client(t).Exists(context.Background(), prefix+"lock:a").Result(); n != 0 {
		t.Fatal("the lock key is still there after unlock")
	}
}

// TestLockOfDeadHolderExpires takes a lock left by a holder that died.
func TestLockOfDeadHolderExpires(t *testing.T) {
	prefix := redistest.Prefix(t)
	l := newLocker(t, open(t, prefix, nil), nil)
	if err := redistest.Client(t).Set(context.Background(), prefix+"lock:a", "dead-replica", 200*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, unlock, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatalf("the lock of a dead holder was never freed: %v", err)
	}
	unlock()
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Fatalf("took a held lock after %v", waited)
	}
}

// TestUnlockKeepsAnothersLock: a holder whose lock expired and passed to
// another is told so through held, the loss is logged, and its unlock does
// not release the other's lock.
func TestUnlockKeepsAnothersLock(t *testing.T) {
	prefix := redistest.Prefix(t)
	var logs syncBuffer
	s := open(t, prefix, &conversationredis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	l := newLocker(t, s, &redis.LockerOptions{TTL: 60 * time.Millisecond})
	rdb := redistest.Client(t)
	ctx := context.Background()
	held, unlock := lockHeld(t, l, "a")
	if err := rdb.Set(ctx, prefix+"lock:a", "other", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// A renewal, every 20ms, finds the lock gone.
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder was not told it lost the lock")
	}
	if cause := context.Cause(held); !errors.Is(cause, redis.ErrLockLost) {
		t.Errorf("held ended with %v, want ErrLockLost", cause)
	}
	// The holder is told before the loss is logged.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "lock expired while held"); {
		if time.Now().After(deadline) {
			t.Fatalf("log = %q, want the lost lock reported", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	unlock()
	if got, _ := rdb.Get(ctx, prefix+"lock:a").Result(); got != "other" {
		t.Fatalf("lock holds %q after the old holder's unlock, want \"other\"", got)
	}
}

// syncBuffer is a log the test reads while the code under test writes it.
type syncBuffer = logtest.Buffer

func TestLockerOptions(t *testing.T) {
	s := open(t, redistest.Prefix(t), nil)
	for _, ttl := range []time.Duration{-time.Second, time.Millisecond} {
		if _, err := redis.NewLocker(s.Client(), &redis.LockerOptions{TTL: ttl}); err == nil {
			t.Errorf("Locker with TTL %v succeeded, want an error", ttl)
		}
	}
}

// proxy forwards TCP connections to a Redis until cut, after which it
// refuses new ones and has closed the old: Redis as seen from a replica cut
// off from it.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, r)
			p.mu.Unlock()
			go func() { io.Copy(r, c); r.Close() }()
			go func() { io.Copy(c, r); c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestLockLostWhenCutOff: a holder that cannot renew its lock is told it
// lost it before the lock expires, so it stops before another can take
// the lock.
func TestLockLostWhenCutOff(t *testing.T) {
	opts, err := goredis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	prefix := redistest.Prefix(t)
	p := newProxy(t, opts.Addr)
	u, _ := neturl.Parse(redistest.URL(t))
	u.Host = p.addr()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	s, err := conversationredis.Open(context.Background(), u.String(), &conversationredis.Options{Prefix: prefix, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const ttl = 3 * time.Second
	l := newLocker(t, s, &redis.LockerOptions{TTL: ttl, Logger: logger})
	held, unlock := lockHeld(t, l, "a")
	defer unlock()
	p.cut()
	select {
	case <-held.Done():
	case <-time.After(5 * ttl):
		t.Fatal("a holder cut off from Redis was not told it lost the lock")
	}
	// The lock is still there: the holder learnt of the loss before
	// another could take it.
	if pttl, err := redistest.Client(t).PTTL(context.Background(), prefix+"lock:a").Result(); err != nil || pttl <= 0 {
		t.Errorf("the lock's TTL when its holder learnt it lost it: %v, %v; want it not yet expired", pttl, err)
	}
	if cause := context.Cause(held); !errors.Is(cause, redis.ErrLockLost) {
		t.Errorf("held ended with %v, want ErrLockLost", cause)
	}
	// The holder is told before the loss is logged: wait for the log.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "could not be renewed before it expires"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("log = %q, want the loss reported", logs.String())
		}
	}
}
