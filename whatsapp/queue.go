package whatsapp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/mombot/mombot/conversation"
)

// Queue holds each sender's messages between their delivery and their
// handling, where every process that shares it can take them: with one
// Queue (on Redis, for example) behind several replicas, a sender's
// messages are answered in the order they were delivered even when
// consecutive ones reach different replicas, which a [Locker] alone does
// not ensure (it keeps one message at a time, in no particular order).
//
// Push appends item to the end of key's queue. Pop removes the item at the
// head of key's queue and returns it; ok is false when the queue is empty.
// Implementations must be safe for concurrent use, by every process that
// shares them: each item is popped at most once, in the order pushed.
type Queue interface {
	Push(ctx context.Context, key string, item []byte) error
	Pop(ctx context.Context, key string) (item []byte, ok bool, err error)
}

// queuePushTimeout bounds the push of a message to the shared Queue, which
// happens before the webhook delivery is answered.
const queuePushTimeout = 2 * time.Second

// enqueue queues ev for handling, and reports false when the server is
// shutting down. With a shared Queue the event goes there and the sender's
// local queue gets a job to drain it; should the shared Queue fail, the
// event is queued locally, in order within this process only.
func (s *Server) enqueue(ctx context.Context, ev event) bool {
	if s.cfg.Queue == nil || s.closing.Load() {
		return s.queues.add(ev.From, ev)
	}
	item, err := json.Marshal(ev)
	if err == nil {
		// Meta waits for the answer to the delivery: a Queue that hangs
		// must not hold it up for long.
		ctx, cancel := context.WithTimeout(ctx, queuePushTimeout)
		err = s.cfg.Queue.Push(ctx, ev.From, item)
		cancel()
	}
	if err != nil {
		s.log.Error("whatsapp: shared queue failed; queueing the message in this process", "id", ev.ID, "from", conversation.MaskPhone(ev.From), "err", err)
		return s.queues.add(ev.From, ev)
	}
	return s.queues.add(ev.From, event{From: ev.From, drain: true})
}

// drain handles the messages in from's shared queue, holding the sender's
// lock, until the queue is empty. Another process may have drained it
// already; then there is nothing to do.
func (s *Server) drain(from string) {
	ctx := s.ctx
	log := s.log.With("from", conversation.MaskPhone(from))
	unlock, ok := s.lock(ctx, log, from)
	if !ok {
		return
	}
	defer unlock()
	for ctx.Err() == nil {
		item, ok, err := s.cfg.Queue.Pop(ctx, from)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("whatsapp: shared queue failed; the sender's queued messages wait for the next delivery", "err", err)
			}
			return
		}
		if !ok {
			return
		}
		var ev event
		if err := json.Unmarshal(item, &ev); err != nil || ev.From != from {
			log.Error("whatsapp: unreadable message in the shared queue dropped", "err", fmt.Errorf("%v (from %s)", err, conversation.MaskPhone(ev.From)))
			continue
		}
		s.process(ctx, s.log.With("id", ev.ID, "type", ev.Type, "from", conversation.MaskPhone(from)), ev)
	}
}

// lock takes the sender's lock. It reports false when the server is
// shutting down; when the Locker fails otherwise it logs the error and goes
// on without the lock, since answering out of order beats not answering.
func (s *Server) lock(ctx context.Context, log *slog.Logger, from string) (unlock func(), ok bool) {
	unlock, err := s.cfg.Locker.Lock(ctx, from)
	if err != nil {
		if ctx.Err() != nil {
			log.Warn("whatsapp: message not answered: shutting down")
			return nil, false
		}
		log.Error("whatsapp: sender lock failed; answering without it", "err", err)
		return func() {}, true
	}
	return unlock, true
}
