package logging

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Throttle writes the records of one message at most once an interval:
// the first of each interval whole, the others only counted, and the count
// written as one record of the same message with "repeated" (how many)
// and "within" (the interval) when the interval ends, or at Close. It is
// for what strangers can cause at the rate they choose, such as the
// refusals of requests nobody authenticated: they then cost the log two
// records an interval for each message, not one each. A timer runs only
// while there is a count to write. It is safe for concurrent use.
type Throttle struct {
	log   *slog.Logger
	every time.Duration

	mu    sync.Mutex
	kinds map[string]*throttled
}

// throttled is the current interval of one message.
type throttled struct {
	level   slog.Level
	start   time.Time
	counted int         // records since the first, not written
	timer   *time.Timer // writes the count when the interval ends
}

// NewThrottle returns a Throttle writing to log, with the interval every.
func NewThrottle(log *slog.Logger, every time.Duration) *Throttle {
	return &Throttle{log: log, every: every, kinds: map[string]*throttled{}}
}

// Log writes the record msg at level with its attributes, or counts it if
// a record of msg was written less than an interval ago.
func (t *Throttle) Log(ctx context.Context, level slog.Level, msg string, args ...any) {
	now := time.Now()
	t.mu.Lock()
	k := t.kinds[msg]
	if k != nil && now.Sub(k.start) < t.every {
		k.counted++
		if k.timer == nil {
			k.timer = time.AfterFunc(k.start.Add(t.every).Sub(now), func() { t.flush(msg, k) })
		}
		t.mu.Unlock()
		return
	}
	t.kinds[msg] = &throttled{level: level, start: now}
	t.mu.Unlock()
	t.log.Log(ctx, level, msg, args...)
}

// flush writes the count of k, msg's interval, and ends it.
func (t *Throttle) flush(msg string, k *throttled) {
	t.mu.Lock()
	n := k.counted
	k.counted = 0
	if t.kinds[msg] == k {
		delete(t.kinds, msg)
	}
	t.mu.Unlock()
	if n > 0 {
		t.log.Log(context.Background(), k.level, msg, "repeated", n, "within", t.every)
	}
}

// Close writes the counts not written yet and stops the timers. The
// Throttle may still be used after; calling Close again is harmless.
func (t *Throttle) Close() {
	t.mu.Lock()
	kinds := t.kinds
	t.kinds = map[string]*throttled{}
	t.mu.Unlock()
	for msg, k := range kinds {
		if k.timer != nil {
			k.timer.Stop()
		}
		t.flush(msg, k)
	}
}
