package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Volatile is an [Inbox] in the process's memory: what it holds is lost with
// the process, so it is NOT durable. The [Pipeline] holds in one the
// messages its Inbox fails to take (with Options.MemoryFallback); tests
// use it as an Inbox. Its zero value is ready to use.
type Volatile struct {
	// Now is the clock that ages handled ids; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	queues  map[string][]Message
	handled map[string]handled
}

// handled is when a message was handled, and its key.
type handled struct {
	at  time.Time
	key string
}

// liveHandled returns the ids of hs handled less than HandledFor before
// now, as [Inbox.HandledIDs] lists them.
func liveHandled(hs map[string]handled, now time.Time) []HandledID {
	var out []HandledID
	for id, h := range hs {
		if now.Sub(h.at) < HandledFor {
			out = append(out, HandledID{ID: id, Key: h.key, At: h.at})
		}
	}
	return out
}

// recordAt returns when [Inbox.RecordHandled] records h as handled, a
// time after now taken as now, and whether it records it at all: h has an
// id, handled less than HandledFor before now.
func (h HandledID) recordAt(now time.Time) (time.Time, bool) {
	at := h.At
	if at.After(now) {
		at = now
	}
	return at, h.ID != "" && now.Sub(at) < HandledFor
}

var _ Inbox = (*Volatile)(nil)

func (q *Volatile) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

// Push implements [Inbox].
func (q *Volatile) Push(ctx context.Context, batch ...Message) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	kept := make([]Message, len(batch))
	for i, m := range batch {
		var b bytes.Buffer
		if err := json.Compact(&b, m.Body); err != nil {
			return nil, fmt.Errorf("delivery: message %s: body is not JSON: %w", m.ID, err)
		}
		m.Body, m.Sending = b.Bytes(), false
		kept[i] = m
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queues == nil {
		q.queues = map[string][]Message{}
	}
	dup := make([]bool, len(batch))
	for i, m := range kept {
		if q.waitingOrHandled(m.ID) {
			dup[i] = true
			continue
		}
		q.queues[m.Key] = append(q.queues[m.Key], m)
	}
	return dup, nil
}

// waitingOrHandled reports whether id is queued or was handled in the last
// HandledFor; q.mu is held.
func (q *Volatile) waitingOrHandled(id string) bool {
	if h, ok := q.handled[id]; ok && q.now().Sub(h.at) < HandledFor {
		return true
	}
	for _, ms := range q.queues {
		for _, m := range ms {
			if m.ID == id {
				return true
			}
		}
	}
	return false
}

// Handled reports whether id was handled in the last HandledFor.
func (q *Volatile) Handled(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	h, ok := q.handled[id]
	return ok && q.now().Sub(h.at) < HandledFor
}

// Peek implements [Inbox].
func (q *Volatile) Peek(ctx context.Context, key string) (Message, bool, error) {
	if err := ctx.Err(); err != nil {
		return Message{}, false, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queues[key]) == 0 {
		return Message{}, false, nil
	}
	m := q.queues[key][0]
	m.Body = slices.Clone(m.Body)
	return m, true, nil
}

// Sending implements [Inbox].
func (q *Volatile) Sending(ctx context.Context, key, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if ms := q.queues[key]; len(ms) > 0 && ms[0].ID == id {
		ms[0].Sending = true
	}
	return nil
}

// Done implements [Inbox].
func (q *Volatile) Done(ctx context.Context, key, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if ms := q.queues[key]; len(ms) > 0 && ms[0].ID == id {
		if len(ms) == 1 {
			delete(q.queues, key)
		} else {
			q.queues[key] = ms[1:]
		}
	}
	now := q.now()
	if q.handled == nil {
		q.handled = map[string]handled{}
	}
	for k, h := range q.handled {
		if now.Sub(h.at) >= HandledFor {
			delete(q.handled, k)
		}
	}
	q.handled[id] = handled{at: now, key: key}
	return nil
}

// Erase implements [Inbox].
func (q *Volatile) Erase(ctx context.Context, key string) (queued, handled int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	queued = len(q.queues[key])
	delete(q.queues, key)
	for id, h := range q.handled {
		if h.key == key {
			delete(q.handled, id)
			handled++
		}
	}
	return queued, handled, nil
}

// Keys implements [Inbox]; the keys are sorted.
func (q *Volatile) Keys(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	keys := make([]string, 0, len(q.queues))
	for k := range q.queues {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// Has reports whether key's queue holds messages.
func (q *Volatile) Has(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queues[key]) > 0
}

// Len returns the number of messages held.
func (q *Volatile) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, ms := range q.queues {
		n += len(ms)
	}
	return n
}

// HandledIDs implements [Inbox].
func (q *Volatile) HandledIDs(ctx context.Context) ([]HandledID, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return liveHandled(q.handled, q.now()), nil
}

// RecordHandled implements [Inbox].
func (q *Volatile) RecordHandled(ctx context.Context, hs ...HandledID) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.handled == nil {
		q.handled = map[string]handled{}
	}
	now := q.now()
	n := 0
	for _, h := range hs {
		at, ok := h.recordAt(now)
		if !ok || q.waitingOrHandled(h.ID) {
			continue
		}
		q.handled[h.ID] = handled{at: at, key: h.Key}
		n++
	}
	return n, nil
}
