package delivery

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mombot/mombot/phone"
)

// doneTimeout bounds the Done of a message whose reply is sent, which goes
// ahead during a shutdown past its deadline: forgetting that the reply was
// sent would answer it twice.
const doneTimeout = 5 * time.Second

// drainRetry is how long after a drain that the Inbox or the Locker
// failed the sender's messages are tried again.
const drainRetry = 3 * time.Second

// doneRetryEvery is how often a drain holding a sender's lock tries again
// a Done that failed.
const doneRetryEvery = time.Second

// drain answers the messages waiting for key, holding the sender's lock,
// until its queues are empty, the lock is lost or the Pipeline stops. A
// message leaves its Inbox only once its reply is sent (or it needs none),
// so whatever drain does not finish stays for the next drain: in this
// process, in another replica, or after a restart.
//
// Without the lock (the Locker failed, or the Pipeline is shutting down
// while another replica holds it) drain answers only the messages held in
// this process's memory: another replica may be answering the shared
// Inbox, and what it holds waits there for the next pass.
func (p *Pipeline) drain(key string) {
	log := p.log.With("from", phone.Mask(key))
	held, unlock, locked := p.lock(log, key)
	if held == nil {
		return
	}
	defer unlock()
	inboxes := p.inboxes()
	if !locked {
		inboxes = []Inbox{p.mem}
	}
	for _, q := range inboxes {
		switch p.drainInbox(held, log, q, key) {
		case inboxFailed:
			// What the Inbox holds waits for a drain a little later;
			// what memory holds (the Inbox is likely down) is answered
			// meanwhile.
			p.later(key)
		case inboxStopped:
			return
		}
	}
}

// later asks for another drain of key after drainRetry: the Inbox or the
// Locker that failed this one may be back by then, and the sender's
// messages need not wait for the next pass.
func (p *Pipeline) later(key string) {
	time.AfterFunc(drainRetry, func() {
		if !p.closing.Load() {
			p.drains.add(key)
		}
	})
}

// How a drain of one inbox ended.
const (
	inboxEmpty   = iota // it emptied key's queue
	inboxStopped        // it stopped: the Pipeline stops, the lock was lost, or a reply waits for a later pass
	inboxFailed         // the inbox failed
)

// drainInbox answers key's messages in q one by one, and returns how it
// ended.
func (p *Pipeline) drainInbox(held context.Context, log *slog.Logger, q Inbox, key string) int {
	for {
		if p.ctx.Err() != nil {
			return inboxStopped
		}
		if held.Err() != nil {
			log.Warn("delivery: sender lock lost; the sender's messages are left to its next holder")
			return inboxStopped
		}
		var m Message
		var ok bool
		err := p.retry(log, "peek", p.ctx, func(ctx context.Context) (err error) {
			m, ok, err = q.Peek(ctx, key)
			return err
		})
		if err != nil {
			if p.ctx.Err() != nil {
				return inboxStopped
			}
			log.Error("delivery: inbox failed; the sender's messages wait for a drain a little later", "err", err)
			return inboxFailed
		}
		if !ok {
			return inboxEmpty
		}
		switch p.handle(held, log.With("id", m.ID), q, m) {
		case stopped:
			return inboxStopped
		case failed:
			return inboxFailed
		}
	}
}

// outcome is what became of a message a drain took.
type outcome int

const (
	done    outcome = iota // its reply is sent, or it needs none: it left the Inbox
	stopped                // the Pipeline stops, the lock was lost, or its reply waits for a later pass
	failed                 // the Inbox failed (to record a reply sent, the process remembering it): the drain is tried again later
)

// handle takes m through answering, sending and Done, resuming where this
// process left it (a reply in hand, or sent), and returns what became of
// it.
func (p *Pipeline) handle(held context.Context, log *slog.Logger, q Inbox, m Message) outcome {
	st := p.live.get(m.ID)
	switch {
	case st.phase == phaseSent:
		log.Info("delivery: message answered already; recording it, not answering it again")
		return p.done(held, log, q, m)
	case p.mem.Handled(m.ID):
		// A push that timed out had kept it after all, and this process
		// answered the other copy, the one in memory or the Inbox's.
		log.Info("delivery: message answered already from another copy; recording it, not answering it again")
		return p.done(held, log, q, m)
	case m.Sending && !st.marked:
		// Another holder, or this process before a restart, marked it
		// and has not recorded it.
		if again, o := p.awaitSender(held, log, q, m); !again {
			return o
		}
	case st.phase == phaseAnswered && st.pass != 0 && st.pass == p.pass.Load():
		// Its send failed for now during this pass: the next pass sends it.
		return stopped
	case st.phase == phaseAnswered:
		log.Info("delivery: sending the reply that could not be sent before")
	}
	if o := p.answer(held, log, q, m, st); o != done {
		return o
	}
	return p.done(held, log, q, m)
}

// awaitSender waits SendingGrace for the holder that marked m, whose reply
// it was sending, to record it, and then peeks at m's queue again. It
// reports whether m is still the head, to be answered again (its holder
// died), or else what became of m: done if it left the queue, stopped if
// the lock was lost or a shutdown ran out of time during the wait (m stays
// queued, marked, for the next holder), failed if the Inbox failed. Like
// a drain, the wait goes on through a shutdown, for as long as its
// context allows.
func (p *Pipeline) awaitSender(held context.Context, log *slog.Logger, q Inbox, m Message) (again bool, o outcome) {
	log.Info("delivery: the message's reply was being sent by another holder of the lock, which has not recorded it; waiting for it", "grace", p.o.SendingGrace)
	t := time.NewTimer(p.o.SendingGrace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-held.Done():
		log.Warn("delivery: sender lock lost; the sender's messages are left to its next holder")
		return false, stopped
	case <-p.ctx.Done():
		return false, stopped
	}
	var head Message
	var ok bool
	err := p.retry(log, "peek", p.ctx, func(ctx context.Context) (err error) {
		head, ok, err = q.Peek(ctx, m.Key)
		return err
	})
	switch {
	case err != nil && p.ctx.Err() != nil:
		return false, stopped
	case err != nil:
		log.Error("delivery: inbox failed; the sender's messages wait for a drain a little later", "err", err)
		return false, failed
	case !ok || head.ID != m.ID:
		log.Info("delivery: the message's reply was recorded by the holder that sent it")
		return false, done
	}
	log.Warn("delivery: the message's reply was being sent by a holder that did not record it in time, and may have been sent: answering it again", "grace", p.o.SendingGrace)
	return true, done
}

// answer answers m, or sends the rest of the reply st holds, marking m in
// q (Sending) before it sends, and reports done once m is done with: its
// reply sent, no reply needed, or one that cannot be sent; stopped when
// the reply waits, in hand, for a later pass or the next holder (the
// lock lost, a shutdown, a send failed for now, a mark that could not be
// written before either). The phases it leaves m in (answered, sent) are the process's memory of m
// should the drain stop, or Done fail.
func (p *Pipeline) answer(held context.Context, log *slog.Logger, q Inbox, m Message, st state) outcome {
	// Once the lock is lost the next holder answers the message: going on
	// would answer it twice.
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	defer context.AfterFunc(held, cancel)()
	parts := st.parts
	if st.phase != phaseAnswered {
		var err error
		parts, err = p.h.Answer(ctx, held, m)
		switch {
		case ctx.Err() != nil:
			if held.Err() != nil {
				log.Warn("delivery: sender lock lost before the reply was sent; the message is left to its next holder")
			} else {
				log.Warn("delivery: message not answered: shutting down; it stays queued for the next start")
			}
			return stopped
		case errors.Is(err, ErrSkip):
			p.live.set(m.ID, state{phase: phaseSent, at: p.o.Now()})
			return done
		case err != nil:
			log.Error("delivery: message cannot be answered; it is done with", "err", err)
			p.live.set(m.ID, state{phase: phaseSent, at: p.o.Now()})
			return done
		}
	}
	// ctx follows held only through an AfterFunc, which runs in a
	// goroutine of its own: look at held itself before sending. A reply
	// made before the loss was seen is kept, as an unsent one is, so that
	// this process's next holder of the lock sends it without asking again.
	if held.Err() != nil {
		p.live.set(m.ID, state{phase: phaseAnswered, parts: parts, at: p.o.Now()})
		log.Warn("delivery: sender lock lost before the reply was sent; the message is left to its next holder")
		return stopped
	}
	// The mark first, so that a next holder of the lock that finds m
	// queued still waits for this one to record it; a reply whose mark
	// cannot be written is not sent.
	if !m.Sending && !st.marked && !p.mark(ctx, log, q, m) {
		p.live.set(m.ID, state{phase: phaseAnswered, parts: parts, at: p.o.Now()})
		return stopped
	}
	if held.Err() != nil {
		p.live.set(m.ID, state{phase: phaseAnswered, parts: parts, marked: true, at: p.o.Now()})
		log.Warn("delivery: sender lock lost before the reply was sent; the message is left to its next holder")
		return stopped
	}
	n, err := p.h.Send(ctx, m, parts)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		// The rest waits, in this process, for the next holder of the
		// lock; after a restart the message is answered anew.
		p.live.set(m.ID, state{phase: phaseAnswered, parts: parts[n:], marked: true, at: p.o.Now()})
		return stopped
	case errors.Is(err, ErrTemporary):
		p.live.set(m.ID, state{phase: phaseAnswered, parts: parts[n:], marked: true, pass: p.pass.Load(), at: p.o.Now()})
		log.Warn("delivery: reply not sent for now; it stays in the inbox and is sent at a later pass", "parts_left", len(parts)-n, "err", err)
		return stopped
	default:
		log.Error("delivery: reply cannot be sent; the message is done with", "parts_left", len(parts)-n, "err", err)
	}
	p.live.set(m.ID, state{phase: phaseSent, at: p.o.Now()})
	return done
}

// mark marks m in q as having its reply sent (Sending), and reports
// whether it did. Should that fail, the drain keeps the sender's lock and
// tries again every doneRetryEvery, so that the reply goes out as soon as
// the Inbox is back: a drain that ended would leave the lock to a release
// the store cannot take either, and the sender held for a lease's TTL. It
// gives up when ctx ends (the lock lost, or the Pipeline stops) or a
// shutdown begins, the reply then waiting in hand, not sent.
func (p *Pipeline) mark(ctx context.Context, log *slog.Logger, q Inbox, m Message) bool {
	err := p.retry(log, "sending", ctx, func(ctx context.Context) error { return q.Sending(ctx, m.Key, m.ID) })
	if err != nil && ctx.Err() == nil && !p.closing.Load() {
		log.Error("delivery: marking the reply as being sent failed; it is not sent, and the sender's lock is held while the mark is tried again", "err", err)
	}
	for err != nil && ctx.Err() == nil && !p.closing.Load() {
		t := time.NewTimer(doneRetryEvery)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err = q.Sending(cctx, m.Key, m.ID)
		cancel()
	}
	if err != nil {
		log.Warn("delivery: reply not sent: its mark failed, and the sender lock was lost or the process stops; it is kept for the sender's next drain in this process", "err", err)
		return false
	}
	return true
}

// done records m, whose reply is sent, as handled and removes it from q:
// one Done. Should that fail, the drain keeps the sender's lock and tries
// again every doneRetryEvery: another holder would find m queued still
// and answer it again. It goes on when the lock is lost (a store down for
// longer than a lock lasts): a Done by a holder that lost its lock removes
// nothing but m (see [Inbox]), and the sooner it lands once the store is
// back, the less likely the sender's next holder finds m queued. Only
// when the Pipeline stops does done give up; the process then remembers m
// as sent, does not answer it again, and the next pass that finds it does
// Done again.
func (p *Pipeline) done(held context.Context, log *slog.Logger, q Inbox, m Message) outcome {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), doneTimeout*attempts)
	err := p.retry(log, "done", ctx, func(ctx context.Context) error { return q.Done(ctx, m.Key, m.ID) })
	cancel()
	if err != nil {
		log.Error("delivery: recording the message as handled failed; holding the sender's lock and trying again", "err", err)
	}
	for lost := false; err != nil && p.ctx.Err() == nil; {
		if held.Err() != nil && !lost {
			lost = true
			log.Error("delivery: sender lock lost while the reply is sent and not recorded; trying still to record it", "err", err)
		}
		t := time.NewTimer(doneRetryEvery)
		select {
		case <-t.C:
		case <-p.ctx.Done():
		}
		t.Stop()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), callTimeout)
		err = q.Done(ctx, m.Key, m.ID)
		cancel()
	}
	if err != nil {
		log.Error("delivery: recording the message as handled failed and the process stops; this process does not answer it again, and the next pass records it", "err", err)
		return failed
	}
	ctx, cancel = context.WithTimeout(context.WithoutCancel(p.ctx), doneTimeout*attempts)
	defer cancel()
	p.live.forget(m.ID)
	if q != Inbox(p.mem) {
		// The Volatile inbox remembers it too, for a copy it may hold (see handle).
		p.mem.Done(ctx, m.Key, m.ID)
	} else if p.o.Inbox != Inbox(p.mem) {
		// Record it in the shared Inbox too, where it may also be (a push
		// that timed out after all), for the other replicas and the next
		// start; memory remembers it for this process meanwhile.
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		if err := p.o.Inbox.Done(cctx, m.Key, m.ID); err != nil {
			log.Warn("delivery: recording a message answered from memory in the inbox failed; this process still does not answer it again", "err", err)
		}
		cancel()
	}
	return done
}

// lock takes the sender's lock. It returns a nil held when the Pipeline has
// stopped. When the lock is not taken otherwise, because the Locker failed
// or another replica holds it through a shutdown, it logs why and returns
// locked false, with a held that never ends and an unlock that does
// nothing.
func (p *Pipeline) lock(log *slog.Logger, key string) (held context.Context, unlock func(), locked bool) {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	taken := make(chan struct{})
	defer close(taken)
	go func() {
		select {
		case <-p.closed:
		case <-taken:
			return
		}
		t := time.NewTimer(p.o.ShutdownLockWait)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-taken:
		}
	}()
	held, unlock, err := p.o.Locker.Lock(ctx, key)
	switch {
	case err == nil:
		return held, unlock, true
	case p.ctx.Err() != nil:
		return nil, nil, false
	case ctx.Err() != nil:
		log.Info("delivery: shutting down while another holds the sender's lock; the sender's messages are left to it")
	default:
		log.Error("delivery: sender lock failed; only the messages held in this process's memory are answered, the others wait for a drain a little later", "err", err)
		p.later(key)
	}
	return context.Background(), func() {}, false
}

// Phases of a message that this process remembers (see the package doc).
const (
	phaseNone     = iota
	phaseAnswered // its reply is in hand, not (all) sent
	phaseSent     // its reply is sent, or it needs none; Done failed
)

// state is what the process remembers of a message it took.
type state struct {
	phase int
	// parts are the parts of the reply not yet sent (phaseAnswered).
	parts []string
	// marked is set once the Inbox holds the message marked by this
	// process's Sending (or marked by a holder it waited for): a mark the
	// process finds without it is another holder's.
	marked bool
	// pass is the resume pass during which a send failed for a passing
	// reason: the reply waits for the next one.
	pass int64
	// at is when the state was set, to forget it after HandledFor.
	at time.Time
}

// inflight is the process's memory of the messages it took whose Done has
// not happened: a reply in hand, or a reply sent whose Done failed. It
// keeps the Handler from being asked twice and a message from being
// answered twice while the Inbox fails. It is lost with the process: after
// a restart such a message is answered anew.
type inflight struct {
	mu sync.Mutex
	m  map[string]state
}

func (f *inflight) get(id string) state {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[id]
}

func (f *inflight) sent(id string) bool { return f.get(id).phase == phaseSent }

func (f *inflight) set(id string, st state) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]state{}
	}
	f.m[id] = st
}

func (f *inflight) forget(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, id)
}

// prune forgets what is older than HandledFor: no Inbox still holds it.
func (f *inflight) prune(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, st := range f.m {
		if now.Sub(st.at) > HandledFor {
			delete(f.m, id)
		}
	}
}
