package whatsapp

import (
	"sync"
	"time"
)

// answers is the process's own record of the messages it has answered, or
// has a reply for, whose handling is not finished: the reply is not sent
// yet (the Graph API failed for a passing reason), or it is sent but the
// message is not yet recorded in the Dedup or removed from its Queue
// (because they failed). It keeps a message from being answered again, and
// the Responder from being asked again, while the Dedup or the Queue is
// down: every later pass finds the message still queued.
//
// It lives in memory: after a restart a reply not yet sent is asked of the
// Responder again, and a message sent but not recorded is answered again.
// An entry is dropped once the message is recorded and removed from its
// queue, or once it is too old to be answered anyway.
type answers struct {
	mu sync.Mutex
	m  map[string]*answerState
}

type answerState struct {
	// at is when the message was sent (or received, if it has no time).
	at time.Time
	// pending is set while parts, the parts of the reply not yet sent,
	// wait for a later pass.
	pending bool
	parts   []string
	// pass is the resume pass during which a send failed for a passing
	// reason: the reply waits for the next one.
	pass int64
	// sent is set once the reply is sent in full (or the message is done
	// with otherwise); recorded once the Dedup holds it, acked once its
	// Queue no longer does.
	sent     bool
	recorded bool
	acked    bool
}

// get returns a copy of id's state; the zero state when there is none.
func (a *answers) get(id string) answerState {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st := a.m[id]; st != nil {
		return *st
	}
	return answerState{}
}

// isSent reports whether id's reply was sent.
func (a *answers) isSent(id string) bool {
	return a.get(id).sent
}

// update calls f on id's state, creating it with at, and drops the state
// once the message is done with.
func (a *answers) update(id string, at time.Time, f func(*answerState)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.m[id]
	if st == nil {
		if a.m == nil {
			a.m = map[string]*answerState{}
		}
		st = &answerState{at: at}
		a.m[id] = st
	}
	f(st)
	if st.sent && st.recorded && st.acked {
		delete(a.m, id)
	}
}

// setPending keeps the parts of id's reply still to send, not before the
// resume pass after pass (0: at once).
func (a *answers) setPending(id string, at time.Time, parts []string, pass int64) {
	a.update(id, at, func(st *answerState) { st.pending, st.parts, st.pass = true, parts, pass })
}

// setSent records that id's reply was sent, or that it is done with.
func (a *answers) setSent(id string, at time.Time) {
	a.update(id, at, func(st *answerState) { st.pending, st.parts, st.sent = false, nil, true })
}

// setRecorded records that the Dedup holds id.
func (a *answers) setRecorded(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st := a.m[id]; st != nil {
		st.recorded = true
		if st.acked {
			delete(a.m, id)
		}
	}
}

// setAcked records that id left its queue.
func (a *answers) setAcked(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st := a.m[id]; st != nil {
		st.acked = true
		if st.sent && st.recorded {
			delete(a.m, id)
		}
	}
}

// unrecorded drops the states of the messages older than maxAge, which are
// skipped anyway, and returns the ids answered but not recorded in the
// Dedup.
func (a *answers) unrecorded(now time.Time, maxAge time.Duration) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []string
	for id, st := range a.m {
		switch {
		case now.Sub(st.at) > maxAge:
			delete(a.m, id)
		case st.sent && !st.recorded:
			ids = append(ids, id)
		}
	}
	return ids
}

// len returns the number of messages whose handling is not finished.
func (a *answers) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.m)
}
