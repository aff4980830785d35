package whatsapp

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/mombot/mombot/phone"
)

// Locker serialises the handling of one sender's messages. The Server
// already runs one drain of a sender's queue at a time in each process; a
// Locker shared by several processes (on Redis, for example) keeps a
// sender's messages one at a time across replicas too. Only the holder of
// a key's lock peeks at and acks the key's [Queue].
//
// Lock blocks until the lock for key is held or ctx is done, in which case
// it returns ctx's error and nothing is held. held is done once the lock is
// no longer held: after unlock, or as soon as the implementation finds the
// lock lost (a shared lock that expired, or passed to another, while its
// holder could not renew it). The holder checks held before each step that
// must be done under the lock, and stops when it is done; held does not end
// with ctx. The returned unlock releases the lock; it must be called once,
// and calling it again is harmless. Implementations must be safe for
// concurrent use.
type Locker interface {
	Lock(ctx context.Context, key string) (held context.Context, unlock func(), err error)
}

// KeyMutex is an in-process [Locker]: one mutex per key, created on demand
// and dropped when nobody holds or waits for it. Its locks are never lost:
// held ends at unlock only. The zero value is ready.
type KeyMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	ch   chan struct{} // holds one token while the key is locked
	refs int
}

var _ Locker = (*KeyMutex)(nil)

// Lock implements [Locker].
func (m *KeyMutex) Lock(ctx context.Context, key string) (context.Context, func(), error) {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = map[string]*keyLock{}
	}
	l := m.locks[key]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		m.locks[key] = l
	}
	l.refs++
	m.mu.Unlock()

	select {
	case l.ch <- struct{}{}:
		held, release := context.WithCancel(context.Background())
		var once sync.Once
		return held, func() { once.Do(func() { release(); <-l.ch; m.release(key, l) }) }, nil
	case <-ctx.Done():
		m.release(key, l)
		return nil, nil, ctx.Err()
	}
}

func (m *KeyMutex) release(key string, l *keyLock) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(m.locks, key)
	}
}

// drains runs run(key) in the background, one run per key at a time and
// different keys in parallel. A request for a key whose run is under way
// makes it run once more when it ends, so that what was queued meanwhile
// does not wait for the next request. A panic in run is logged and ends
// that run only.
type drains struct {
	run func(key string)
	log *slog.Logger

	mu     sync.Mutex
	closed bool
	again  map[string]bool // keys being run; true if asked again meanwhile
	wg     sync.WaitGroup
}

// add asks for a run of key. It returns false, and does nothing, once
// close has been called.
func (d *drains) add(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	if d.again == nil {
		d.again = map[string]bool{}
	}
	if _, running := d.again[key]; running {
		d.again[key] = true
		return true
	}
	d.again[key] = false
	d.wg.Add(1)
	go d.loop(key)
	return true
}

func (d *drains) loop(key string) {
	defer d.wg.Done()
	for {
		d.runSafely(key)
		d.mu.Lock()
		if d.again[key] {
			d.again[key] = false
			d.mu.Unlock()
			continue
		}
		delete(d.again, key)
		d.mu.Unlock()
		return
	}
}

// runSafely runs run(key), turning a panic into a log entry: one bad run
// must not take the server, and every queued message, down with it.
func (d *drains) runSafely(key string) {
	defer func() {
		if p := recover(); p != nil {
			d.log.Error("whatsapp: panic while draining a sender's queue; what is queued stays for the next pass",
				"from", phone.Mask(key), "panic", p, "stack", string(debug.Stack()))
		}
	}()
	d.run(key)
}

// close stops accepting requests; runs under way, and those asked for
// already, still happen.
func (d *drains) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// done returns a channel closed when every run has ended.
func (d *drains) done() <-chan struct{} {
	ch := make(chan struct{})
	go func() { d.wg.Wait(); close(ch) }()
	return ch
}
