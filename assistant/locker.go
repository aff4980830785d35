package assistant

import (
	"context"
	"sync"
)

// Locker serialises the handling of one sender's messages. An [Assistant]
// holds the lock of a sender's phone from loading the history until the turn
// is saved, so two messages from the same person never race on the history.
//
// Lock blocks until the caller holds key's lock or ctx is done; in the latter
// case it returns ctx's error and the caller holds nothing. Waiters get the
// lock in the order they called Lock. The returned unlock releases the lock;
// it must be called exactly once. Implementations are safe for concurrent
// use. The in-process [LocalLocker] is the default; a deployment of several
// replicas needs one shared by all of them.
type Locker interface {
	Lock(ctx context.Context, key string) (unlock func(), err error)
}

// LocalLocker is a [Locker] for one process: a first-come, first-served
// lock per key. Its zero value is ready to use. Keys nobody holds or waits
// for use no memory.
type LocalLocker struct {
	mu    sync.Mutex
	queue map[string][]chan struct{} // per key: the holder, then the waiters
}

var _ Locker = (*LocalLocker)(nil)

// Lock implements [Locker].
func (l *LocalLocker) Lock(ctx context.Context, key string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.queue == nil {
		l.queue = map[string][]chan struct{}{}
	}
	me := make(chan struct{})
	q := append(l.queue[key], me)
	l.queue[key] = q
	if len(q) == 1 {
		l.mu.Unlock()
		return l.unlocker(key), nil
	}
	l.mu.Unlock()

	select {
	case <-me:
		return l.unlocker(key), nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		select {
		case <-me:
			// The lock was handed over as ctx ended: pass it on.
			l.release(key)
		default:
			l.leave(key, me)
		}
		return nil, ctx.Err()
	}
}

func (l *LocalLocker) unlocker(key string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.release(key)
		})
	}
}

// release removes the holder of key and wakes the next waiter. l.mu is held.
func (l *LocalLocker) release(key string) {
	q := l.queue[key][1:]
	if len(q) == 0 {
		delete(l.queue, key)
		return
	}
	l.queue[key] = q
	close(q[0])
}

// leave removes a waiter that gave up. l.mu is held.
func (l *LocalLocker) leave(key string, me chan struct{}) {
	q := l.queue[key]
	for i, c := range q {
		if c == me {
			l.queue[key] = append(q[:i:i], q[i+1:]...)
			return
		}
	}
}
