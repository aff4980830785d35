package delivery

import (
	"context"
	"errors"
	"sync"
)

// Locker hands out one lock per sender, so that one person's messages are
// handled one at a time: the [Pipeline] holds it while it answers a
// sender's messages, and hands it to its [Handler]. [Local] serves one
// process; one on Redis (delivery/redis) serves every replica that shares
// the Redis.
//
// Lock blocks until the lock for key is held or ctx is done, in which case
// it returns an error wrapping ctx's and nothing is held. held is done once
// the lock is no longer held: after unlock, or, with the cause
// [ErrLockLost], as soon as the implementation finds the lock lost (a
// shared lock that expired, or passed to another, while its holder could
// not renew it). The holder checks held before each step that must be
// done under the lock, and stops when it is done; held does not end with
// ctx. The returned unlock releases the lock; calling it again is
// harmless. Implementations must be safe for concurrent use.
type Locker interface {
	Lock(ctx context.Context, key string) (held context.Context, unlock func(), err error)
}

// ErrLockLost is the cause (see [context.Cause]) of the end of a held
// context whose lock was lost while held.
var ErrLockLost = errors.New("delivery: sender lock lost")

// Local is a [Locker] for one process: a first-come, first-served lock per
// key. Its locks are never lost: held ends at unlock only. Its zero value
// is ready to use; keys nobody holds or waits for use no memory.
type Local struct {
	mu    sync.Mutex
	queue map[string][]chan struct{} // per key: the holder, then the waiters
}

var _ Locker = (*Local)(nil)

// Lock implements [Locker]. Waiters get the lock in the order they called
// Lock.
func (l *Local) Lock(ctx context.Context, key string) (context.Context, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
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
		held, unlock := l.unlocker(key)
		return held, unlock, nil
	}
	l.mu.Unlock()

	select {
	case <-me:
		held, unlock := l.unlocker(key)
		return held, unlock, nil
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
		return nil, nil, ctx.Err()
	}
}

// Queued returns how many callers hold or wait for key's lock.
func (l *Local) Queued(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue[key])
}

func (l *Local) unlocker(key string) (context.Context, func()) {
	held, end := context.WithCancel(context.Background())
	var once sync.Once
	return held, func() {
		once.Do(func() {
			end()
			l.mu.Lock()
			defer l.mu.Unlock()
			l.release(key)
		})
	}
}

// release removes the holder of key and wakes the next waiter. l.mu is held.
func (l *Local) release(key string) {
	q := l.queue[key][1:]
	if len(q) == 0 {
		delete(l.queue, key)
		return
	}
	l.queue[key] = q
	close(q[0])
}

// leave removes a waiter that gave up. l.mu is held.
func (l *Local) leave(key string, me chan struct{}) {
	q := l.queue[key]
	for i, c := range q {
		if c == me {
			l.queue[key] = append(q[:i:i], q[i+1:]...)
			return
		}
	}
}
