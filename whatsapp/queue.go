package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Queue holds each sender's messages from the moment their delivery is
// acknowledged to Meta until they are answered. Meta does not deliver a
// webhook again once it was answered 200, so a message is acknowledged only
// once Push has returned: a Queue that keeps its items through a crash
// ([QueueFile] on disk, or a Redis queue) makes every acknowledged message
// answered, after a restart if need be. One Queue shared by several
// replicas also has a sender's messages answered in the order delivered
// even when consecutive ones reach different replicas.
//
// A queue per key is first in, first out:
//   - Push appends item to the end of key's queue, and returns nil only
//     once it is kept.
//   - Peek returns the item at the head of key's queue without removing
//     it; ok is false when the queue is empty.
//   - Ack removes the head of key's queue only if it is still equal, byte
//     for byte, to item (the one peeked), and does nothing otherwise, so a
//     repeated Ack, or one by a holder that lost its lock meanwhile,
//     removes nothing but that item or an equal copy of it (the same
//     message delivered twice).
//   - Keys returns the keys whose queue holds items, so that a process
//     starting after a crash finds what was left.
//
// Implementations must be safe for concurrent use, by every process that
// shares them. Anybody may Push; only the holder of key's [delivery.Locker] lock
// peeks at and acks key's queue, which is what makes an item handled by
// one holder at a time.
type Queue interface {
	Push(ctx context.Context, key string, item []byte) error
	Peek(ctx context.Context, key string) (item []byte, ok bool, err error)
	Ack(ctx context.Context, key string, item []byte) error
	Keys(ctx context.Context) ([]string, error)
}

// Timings of the calls to a Queue.
const (
	// queuePushTimeout bounds the push of a message, which happens before
	// the webhook delivery is answered.
	queuePushTimeout = 2 * time.Second
	// handledCheckTimeout bounds the look-up, before a push, of whether a
	// message was answered already.
	handledCheckTimeout = time.Second
	// queueCallTimeout bounds each Peek, Ack and Keys.
	queueCallTimeout = 10 * time.Second
	// queueAttempts is how many times a failed Peek or Ack is tried,
	// waiting queueRetryDelay before the second try and twice as long
	// before each next one.
	queueAttempts   = 4
	queueRetryDelay = 100 * time.Millisecond
)

// memoryQueue is a [Queue] in the process's memory: what it holds is lost
// with the process. The Server uses it when Config.Queue is nil, and for
// the messages the configured Queue fails to take.
type memoryQueue struct {
	mu    sync.Mutex
	items map[string][][]byte
}

var _ Queue = (*memoryQueue)(nil)

func (q *memoryQueue) Push(_ context.Context, key string, item []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.items == nil {
		q.items = map[string][][]byte{}
	}
	q.items[key] = append(q.items[key], bytes.Clone(item))
	return nil
}

func (q *memoryQueue) Peek(_ context.Context, key string) ([]byte, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items[key]) == 0 {
		return nil, false, nil
	}
	return bytes.Clone(q.items[key][0]), true, nil
}

func (q *memoryQueue) Ack(_ context.Context, key string, item []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if items := q.items[key]; len(items) > 0 && bytes.Equal(items[0], item) {
		if len(items) == 1 {
			delete(q.items, key)
		} else {
			q.items[key] = items[1:]
		}
	}
	return nil
}

func (q *memoryQueue) Keys(context.Context) ([]string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	keys := make([]string, 0, len(q.items))
	for k := range q.items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// has reports whether key's queue holds items.
func (q *memoryQueue) has(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items[key]) > 0
}

// len returns the number of items held.
func (q *memoryQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, items := range q.items {
		n += len(items)
	}
	return n
}

// enqueue keeps ev for handling and asks for a drain of its sender's
// queue. It returns "" once the message is kept, or else why not, so that
// the delivery is refused and Meta delivers it again later.
//
// The message goes to the configured Queue. Should that fail, the message
// is refused, unless Config.MemoryFallback is set: then it is held in
// memory, where it is answered all the same unless the process stops first.
func (s *Server) enqueue(ctx context.Context, log *slog.Logger, ev event) (refused string) {
	ev.Received = s.cfg.Now()
	item, err := json.Marshal(ev)
	if err != nil { // cannot happen: an event is strings and numbers
		log.Error("whatsapp: message cannot be queued", "err", err)
		return ""
	}
	durable := false
	// Once a sender has messages in memory, its next ones join them there
	// until they are answered: the memory is drained after the Queue, so a
	// message pushed to the Queue meanwhile would be answered first.
	if s.queue != Queue(s.mem) && !s.mem.has(ev.From) {
		// Meta waits for the answer to the delivery: a Queue that hangs
		// must not hold it up for long.
		pctx, cancel := context.WithTimeout(ctx, queuePushTimeout)
		err = s.queue.Push(pctx, ev.From, item)
		cancel()
		switch {
		case err == nil:
			durable = true
		case !s.cfg.MemoryFallback:
			log.Error("whatsapp: queue failed; the delivery is refused for Meta to deliver again later", "err", err)
			return "cannot queue the message"
		default:
			log.Error("whatsapp: queue failed; the message is held in this process's memory only until it is answered", "err", err)
		}
	}
	if !durable {
		if s.closing.Load() {
			// Memory is lost with the process: Meta must deliver it again.
			return "shutting down"
		}
		s.mem.Push(ctx, ev.From, item)
	}
	if !s.drains.add(ev.From) && !durable {
		// Shut down meanwhile: a durable message waits for the next start;
		// one in memory would be lost, so Meta must deliver it again.
		return "shutting down"
	}
	return ""
}

// queues returns the queues a sender's messages may be in, in the order
// they are drained: the configured Queue, whose messages came first, then
// the messages held in memory because the Queue failed to take them (and
// those that came after them).
func (s *Server) queues() []Queue {
	if s.queue == Queue(s.mem) {
		return []Queue{s.mem}
	}
	return []Queue{s.queue, s.mem}
}

// handledBefore reports whether ev was answered already, according to the
// Dedup. It is a shortcut that spares queueing a redelivery; the drain
// checks again, so an error or a slow Dedup just means no.
func (s *Server) handledBefore(ctx context.Context, log *slog.Logger, ev event) bool {
	if s.answers.isSent(ev.ID) {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, handledCheckTimeout)
	defer cancel()
	done, err := s.cfg.Dedup.Handled(ctx, ev.ID)
	if err != nil {
		log.Warn("whatsapp: dedup failed; queueing the message", "err", err)
		return false
	}
	return done
}
