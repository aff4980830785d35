package whatsapp

import (
	"context"
	"sync"
)

// Locker serialises the handling of one sender's messages. The Server
// already keeps one queue per sender in each process; a Locker shared by
// several processes (on Redis, for example) keeps a sender's messages one
// at a time across replicas too.
//
// Lock blocks until the lock for key is held or ctx is done, in which case
// it returns ctx's error. The returned unlock releases the lock and must be
// called exactly once. Implementations must be safe for concurrent use.
type Locker interface {
	Lock(ctx context.Context, key string) (unlock func(), err error)
}

// KeyMutex is an in-process [Locker]: one mutex per key, created on demand
// and dropped when nobody holds or waits for it. The zero value is ready.
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
func (m *KeyMutex) Lock(ctx context.Context, key string) (func(), error) {
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
		var once sync.Once
		return func() { once.Do(func() { <-l.ch; m.release(key, l) }) }, nil
	case <-ctx.Done():
		m.release(key, l)
		return nil, ctx.Err()
	}
}

func (m *KeyMutex) release(key string, l *keyLock) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(m.locks, key)
	}
}

// queues runs jobs one at a time per key, in the order they were added,
// with different keys in parallel: one goroutine per key that has work,
// ending when its queue is empty.
type queues struct {
	run func(key string, job event)

	mu     sync.Mutex
	closed bool
	byKey  map[string][]event
	wg     sync.WaitGroup
}

// add appends job to key's queue, starting its goroutine if needed. It
// returns false, and does nothing, once close has been called.
func (q *queues) add(key string, job event) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if q.byKey == nil {
		q.byKey = map[string][]event{}
	}
	pending, busy := q.byKey[key]
	q.byKey[key] = append(pending, job)
	if !busy {
		q.wg.Add(1)
		go q.drain(key)
	}
	return true
}

func (q *queues) drain(key string) {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		pending := q.byKey[key]
		if len(pending) == 0 {
			delete(q.byKey, key)
			q.mu.Unlock()
			return
		}
		job := pending[0]
		pending[0] = event{}
		q.byKey[key] = pending[1:]
		q.mu.Unlock()
		q.run(key, job)
	}
}

// close stops accepting jobs; those already queued still run.
func (q *queues) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// done returns a channel closed when every queued job has run.
func (q *queues) done() <-chan struct{} {
	ch := make(chan struct{})
	go func() { q.wg.Wait(); close(ch) }()
	return ch
}
