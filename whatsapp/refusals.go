package whatsapp

import (
	"log/slog"
	"sync"
	"time"
)

// refusalLogEvery is the interval of the log of refused requests: the
// first refusal of each kind in an interval is logged, the others of that
// kind counted and the count logged when the interval ends.
var refusalLogEvery = time.Minute

// refusals logs the webhook requests the server refuses before knowing who
// sent them (a failed verification handshake, a delivery without a valid
// signature, a malformed body), so that anyone who finds the URL cannot
// fill the log with them: a line for the first of each kind in an
// interval, and one line with the count of the rest ("repeated") when it
// ends. It is safe for concurrent use.
type refusals struct {
	log   *slog.Logger
	every time.Duration

	mu    sync.Mutex
	kinds map[string]*refusalKind
}

// refusalKind is the current interval of one kind of refusal.
type refusalKind struct {
	start   time.Time
	counted int         // refusals since the first, not logged
	timer   *time.Timer // logs the count when the interval ends
}

func newRefusals(log *slog.Logger, every time.Duration) *refusals {
	return &refusals{log: log, every: every, kinds: map[string]*refusalKind{}}
}

// refuse logs the refusal msg with its attributes, or counts it if one of
// its kind (its msg) was logged less than an interval ago.
func (r *refusals) refuse(msg string, args ...any) {
	now := time.Now()
	r.mu.Lock()
	k := r.kinds[msg]
	if k != nil && now.Sub(k.start) < r.every {
		k.counted++
		if k.timer == nil {
			k.timer = time.AfterFunc(k.start.Add(r.every).Sub(now), func() { r.flush(msg, k) })
		}
		r.mu.Unlock()
		return
	}
	r.kinds[msg] = &refusalKind{start: now}
	r.mu.Unlock()
	r.log.Warn(msg, append(args, "next_counted_for", r.every)...)
}

// flush logs the count of the refusals of kind k, if it is still msg's
// current one or was stopped, and ends it.
func (r *refusals) flush(msg string, k *refusalKind) {
	r.mu.Lock()
	n := k.counted
	k.counted = 0
	if r.kinds[msg] == k {
		delete(r.kinds, msg)
	}
	r.mu.Unlock()
	if n > 0 {
		r.log.Warn(msg, "repeated", n, "within", r.every)
	}
}

// close logs the counts not logged yet and stops the timers.
func (r *refusals) close() {
	r.mu.Lock()
	kinds := r.kinds
	r.kinds = map[string]*refusalKind{}
	r.mu.Unlock()
	for msg, k := range kinds {
		if k.timer != nil {
			k.timer.Stop()
		}
		r.flush(msg, k)
	}
}
