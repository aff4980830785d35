package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/phone"
)

// markTimeout bounds the recording of a message as handled and its removal
// from the queue, which go ahead during a shutdown past its deadline: the
// reply is sent, so forgetting that would answer it twice.
const markTimeout = 5 * time.Second

// drain answers the messages queued for from, holding the sender's lock,
// until its queues are empty, the lock is lost or the server stops. A
// message leaves its queue only once answered (or deliberately skipped)
// and recorded as handled, so whatever drain does not finish stays queued
// for the next drain: in this process, in another replica, or after a
// restart.
//
// Without the lock (the Locker failed, or the server is shutting down
// while another replica holds it) drain answers only the messages held in
// this process's memory: another replica may be answering the shared
// queue, and what it holds waits there for the next pass.
func (s *Server) drain(from string) {
	log := s.log.With("from", phone.Mask(from))
	held, unlock, locked := s.lock(log, from)
	if held == nil {
		return
	}
	defer unlock()
	queues := s.queues()
	if !locked {
		queues = []Queue{s.mem}
	}
	for _, q := range queues {
		switch s.drainQueue(held, log, q, from) {
		case queueFailed:
			// What the Queue holds waits for the next pass; what memory
			// holds (the Queue is likely down) is answered meanwhile.
		case queueStopped:
			return
		}
	}
}

// How a drain of one queue ended.
const (
	queueEmpty   = iota // it emptied the queue
	queueStopped        // it stopped: the server stops, the lock was lost, or a reply waits for a later pass
	queueFailed         // the queue failed
)

// drainQueue answers from's messages in q one by one, and returns how it
// ended.
func (s *Server) drainQueue(held context.Context, log *slog.Logger, q Queue, from string) int {
	for {
		if s.ctx.Err() != nil {
			return queueStopped
		}
		if held.Err() != nil {
			log.Warn("whatsapp: sender lock lost; the sender's queued messages are left to its next holder")
			return queueStopped
		}
		var item []byte
		var ok bool
		err := s.retry(log, "peek", s.ctx, func(ctx context.Context) (err error) {
			item, ok, err = q.Peek(ctx, from)
			return err
		})
		if err != nil {
			if s.ctx.Err() != nil {
				return queueStopped
			}
			log.Error("whatsapp: queue failed; the sender's queued messages wait for the next pass", "err", err)
			return queueFailed
		}
		if !ok {
			return queueEmpty
		}
		id, out := s.handleItem(held, log, from, item)
		if out != handled {
			return queueStopped
		}
		if held.Err() != nil {
			// Recorded as handled: the next holder skips it.
			log.Warn("whatsapp: sender lock lost; the message answered is left to its next holder to remove")
			return queueStopped
		}
		err = s.retry(log, "ack", context.WithoutCancel(s.ctx), func(ctx context.Context) error {
			return q.Ack(ctx, from, item)
		})
		if err != nil {
			// The process remembers the message as answered: the next
			// pass removes it without answering it again.
			log.Error("whatsapp: queue failed to remove a handled message; the next pass removes it without answering it again", "err", err)
			return queueFailed
		}
		s.answers.setAcked(id)
	}
}

// outcome is what became of a queued message.
type outcome int

const (
	// handled: answered, or deliberately skipped; it may leave the queue.
	handled outcome = iota
	// stopped: the server is stopping, or the sender's lock was lost,
	// before it was answered; it stays queued.
	stopped
	// later: its reply could not be sent for now; it stays queued, and
	// the process keeps the reply for the next pass to send.
	later
)

// handleItem answers the queued message item unless it is unreadable, too
// old or handled before, and returns its id and what became of it.
func (s *Server) handleItem(held context.Context, log *slog.Logger, from string, item []byte) (string, outcome) {
	var ev event
	if err := json.Unmarshal(item, &ev); err != nil || ev.From != from || ev.ID == "" {
		log.Error("whatsapp: unreadable message in the queue dropped", "err", err, "queued_for", phone.Mask(ev.From))
		return "", handled
	}
	log = log.With("id", ev.ID, "type", ev.Type)
	// A message may have waited in the queue through downtime; one
	// without a time is as old as its receipt.
	if now, sent := s.cfg.Now(), ev.sentAt(); !sent.IsZero() && now.Sub(sent) > s.cfg.MaxAge {
		log.Info("whatsapp: message too old to answer skipped", "sent", sent, "max_age", s.cfg.MaxAge)
		return ev.ID, handled
	}
	st := s.answers.get(ev.ID)
	switch {
	case st.sent:
		// Answered by this process, whose Dedup or Queue then failed.
		log.Info("whatsapp: message answered already; not answered again")
		if !st.recorded {
			s.record(log, ev.ID)
		}
		return ev.ID, handled
	case st.pending && st.pass != 0 && st.pass == s.pass.Load():
		// The Graph API refused it for now during this pass.
		return ev.ID, later
	case st.pending:
		log.Info("whatsapp: sending the reply that could not be sent before")
	default:
		done, err := s.cfg.Dedup.Handled(s.ctx, ev.ID)
		switch {
		case err != nil && s.ctx.Err() != nil:
			return ev.ID, stopped
		case err != nil:
			log.Error("whatsapp: dedup failed; answering anyway", "err", err)
		case done:
			log.Info("whatsapp: duplicate delivery skipped")
			return ev.ID, handled
		}
	}
	switch s.answer(held, log, ev, st) {
	case stopped:
		if held.Err() != nil {
			log.Warn("whatsapp: sender lock lost before the reply was sent; the message is left to its next holder")
		} else {
			log.Warn("whatsapp: message not answered: shutting down; it stays queued for the next start")
		}
		return ev.ID, stopped
	case later:
		return ev.ID, later
	}
	s.record(log, ev.ID)
	return ev.ID, handled
}

// record records the message id, whose reply is sent, as handled in the
// Dedup. Should that fail, the process remembers the message as answered,
// does not answer it again, and tries to record it again at each pass.
func (s *Server) record(log *slog.Logger, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), markTimeout)
	defer cancel()
	if err := s.cfg.Dedup.MarkHandled(ctx, id, s.cfg.Now()); err != nil {
		log.Error("whatsapp: recording the message as handled failed; this process does not answer it again and tries again at the next pass", "err", err)
		return
	}
	s.answers.setRecorded(id)
}

// recordAgain tries again to record the messages answered whose recording
// failed, and forgets those too old to matter.
func (s *Server) recordAgain(ctx context.Context) {
	for _, id := range s.answers.unrecorded(s.cfg.Now(), s.cfg.MaxAge) {
		if ctx.Err() != nil {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, markTimeout)
		err := s.cfg.Dedup.MarkHandled(cctx, id, s.cfg.Now())
		cancel()
		if err != nil {
			s.log.Warn("whatsapp: recording an answered message as handled failed again; trying again later", "id", id, "err", err)
			continue
		}
		s.answers.setRecorded(id)
	}
}

// answer answers ev, or sends the rest of the reply st holds, and reports
// what became of it. A send that fails for a passing reason (the Graph API
// overloaded or unreachable past the client's retries) leaves the parts not
// sent in s.answers for a later pass; one that fails for good is logged and
// the message done with, since sending it again would fail the same way. A
// panic while answering is logged, the sender gets a short apology, and the
// message is done with, so that a message that always panics does not come
// back forever.
func (s *Server) answer(held context.Context, log *slog.Logger, ev event, st answerState) (out outcome) {
	// Once the lock is lost the next holder answers the message: going on
	// would answer it twice.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	defer context.AfterFunc(held, cancel)()
	// The Responder finds the sender's lock held, by this drain: without
	// the shared lock, the drain answers only what this process holds, one
	// message at a time, and that is the lock it passes down.
	ctx = delivery.WithLock(ctx, ev.From, held)
	at := ev.sentAt()
	if at.IsZero() {
		at = s.cfg.Now()
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error("whatsapp: panic while answering a message; the sender gets an apology",
				"panic", p, "stack", string(debug.Stack()))
			s.send(ctx, log, ev.WaID, Split(failedReply, MaxTextLength))
			s.answers.setSent(ev.ID, at)
			out = handled
		}
	}()
	parts := st.parts
	if !st.pending {
		var reply string
		switch ev.Kind {
		case kindUnsupported:
			log.Info("whatsapp: unsupported message type")
			reply = unsupportedReply
		default:
			reply = s.respond(ctx, log, ev)
		}
		if ctx.Err() != nil {
			return stopped
		}
		parts = Split(reply, MaxTextLength)
	}
	// ctx follows held only through an AfterFunc, which runs in a
	// goroutine of its own: look at held itself before sending. A reply
	// made before the loss was seen is kept, as an unsent one is, so that
	// this process's next holder of the lock sends it without asking again.
	if held.Err() != nil {
		s.answers.setPending(ev.ID, at, parts, 0)
		return stopped
	}
	n, err := s.send(ctx, log, ev.WaID, parts)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		// The rest waits, in this process, for the next holder of the
		// lock; after a restart the message is answered anew.
		s.answers.setPending(ev.ID, at, parts[n:], 0)
		return stopped
	case temporary(err):
		s.answers.setPending(ev.ID, at, parts[n:], s.pass.Load())
		log.Warn("whatsapp: reply not sent for now; it stays queued and is sent at a later pass", "parts_left", len(parts)-n)
		return later
	default:
		log.Error("whatsapp: reply cannot be sent; the message is done with", "parts_left", len(parts)-n)
	}
	s.answers.setSent(ev.ID, at)
	return handled
}

// temporary reports whether a send that failed after the client's retries
// may succeed later: a temporary Graph API error, or no answer at all.
func temporary(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Temporary()
	}
	var tErr *transportError
	return errors.As(err, &tErr)
}

// shutdownLockWait is how long, once a shutdown has begun, a drain waits
// for a sender's lock that another replica holds: that replica answers the
// sender's queued messages, and the wait would only hold up the shutdown.
var shutdownLockWait = 5 * time.Second

// lock takes the sender's lock. It returns a nil held when the server has
// stopped. When the lock is not taken otherwise, because the Locker failed
// or another replica holds it through a shutdown, it logs why and returns
// locked false, with a held that never ends and an unlock that does
// nothing.
func (s *Server) lock(log *slog.Logger, from string) (held context.Context, unlock func(), locked bool) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	taken := make(chan struct{})
	defer close(taken)
	go func() {
		select {
		case <-s.closed:
		case <-taken:
			return
		}
		t := time.NewTimer(s.lockWait)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-taken:
		}
	}()
	held, unlock, err := s.cfg.Locker.Lock(ctx, from)
	switch {
	case err == nil:
		return held, unlock, true
	case s.ctx.Err() != nil:
		return nil, nil, false
	case ctx.Err() != nil:
		log.Info("whatsapp: shutting down while another holds the sender's lock; the sender's queued messages are left to it")
	default:
		log.Error("whatsapp: sender lock failed; only the messages held in this process's memory are answered, the queued ones wait for the next pass", "err", err)
	}
	return context.Background(), func() {}, false
}

// retry calls op, each time with a timeout, until it succeeds, it has
// failed queueAttempts times, or the server stops.
func (s *Server) retry(log *slog.Logger, what string, ctx context.Context, op func(ctx context.Context) error) error {
	delay := queueRetryDelay
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, queueCallTimeout)
		err := op(cctx)
		cancel()
		if err == nil || attempt == queueAttempts {
			return err
		}
		log.Warn("whatsapp: queue failed; trying again", "op", what, "attempt", attempt, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay *= 2
	}
}

// resumeLoop asks for a drain of every sender with queued messages now and
// every Config.ResumeEvery until ctx is done: after a restart, and when a
// replica that took a sender's messages died before answering them. The
// first pass is not cut short by ctx, so that a Shutdown right after New
// still answers what an earlier process left.
func (s *Server) resumeLoop(ctx context.Context) {
	defer close(s.resumed)
	if n := s.resume(s.ctx); n > 0 {
		s.log.Info("whatsapp: answering the messages left queued", "senders", n)
	}
	tick := time.NewTicker(s.cfg.ResumeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.resume(ctx)
	}
}

// resume asks for a drain of every sender with queued messages and returns
// how many there are. It first tries again to record the messages answered
// whose recording failed.
func (s *Server) resume(ctx context.Context) int {
	s.pass.Add(1)
	s.recordAgain(ctx)
	n := 0
	for _, q := range s.queues() {
		cctx, cancel := context.WithTimeout(ctx, queueCallTimeout)
		keys, err := q.Keys(cctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("whatsapp: listing the queued senders failed; trying again later", "err", err)
			}
			continue
		}
		for _, k := range keys {
			if s.drains.add(k) {
				n++
			}
		}
	}
	return n
}

// left logs what remains queued once the drains have stopped, and returns
// an error when messages held in memory only are lost with it.
func (s *Server) left() error {
	var lost error
	if n := s.mem.len(); n > 0 {
		s.log.Error("whatsapp: messages held in memory were not answered and are lost", "messages", n)
		lost = fmt.Errorf("whatsapp: shutdown: %d messages held in memory were not answered and are lost", n)
	}
	if s.queue == Queue(s.mem) {
		return lost
	}
	ctx, cancel := context.WithTimeout(context.Background(), queueCallTimeout)
	defer cancel()
	keys, err := s.queue.Keys(ctx)
	if err != nil {
		s.log.Warn("whatsapp: listing the queued senders failed", "err", err)
		return lost
	}
	if len(keys) > 0 {
		s.log.Warn("whatsapp: messages left queued, to be answered at the next start or by another replica", "senders", len(keys))
	}
	return lost
}
