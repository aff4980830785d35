package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// HandledFor is how long the id of a message handled is remembered, so
// that a redelivery of it is not answered again: Meta delivers a webhook
// again for up to seven days. Every [Inbox] keeps ids this long; it is
// defined here only.
const HandledFor = 7 * 24 * time.Hour

// Message is one message on its way to its reply: what an [Inbox] holds.
type Message struct {
	// ID identifies the message (WhatsApp's wamid): a message pushed again
	// with the ID of one waiting or handled is a duplicate.
	ID string
	// Key is the sender: the messages of one key are answered one at a
	// time and in the order they were pushed. Keys are phone numbers and
	// are logged masked.
	Key string
	// Body is the message itself, a JSON value the package does not read.
	Body json.RawMessage
	// Sending is set by [Inbox.Peek] on a message marked by
	// [Inbox.Sending]: a holder of its sender's lock was sending its reply
	// and has not recorded it done. Push, MarshalJSON and UnmarshalJSON
	// ignore it: a message is pushed, and stored, unmarked.
	Sending bool
}

// envelope is how a Message is stored by the backends.
type envelope struct {
	ID   string          `json:"id"`
	Key  string          `json:"key"`
	Body json.RawMessage `json:"body"`
}

// MarshalJSON encodes m as {"id":..., "key":..., "body":...}, Body
// compacted. It fails when Body is not JSON.
func (m Message) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, m.Body); err != nil {
		return nil, fmt.Errorf("delivery: message %s: body is not JSON: %w", m.ID, err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	// The body is kept as given: escaping it anew would change its bytes.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(envelope{ID: m.ID, Key: m.Key, Body: b.Bytes()}); err != nil {
		return nil, err
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes (as mombot v0.1.0 did).
func (m *Message) UnmarshalJSON(data []byte) error {
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("delivery: message: %w", err)
	}
	if e.ID == "" || e.Key == "" || len(e.Body) == 0 {
		return errors.New("delivery: message without an id, a key or a body")
	}
	*m = Message{ID: e.ID, Key: e.Key, Body: e.Body}
	return nil
}

// Errors of a [Pipeline].
var (
	// ErrDuplicate is returned by Pipeline.Accept for a message whose id
	// is waiting in the inbox already or was handled in the last
	// HandledFor: it is not kept again.
	ErrDuplicate = errors.New("delivery: message waiting or handled already")
	// ErrRefused is wrapped by Pipeline.Accept when a message cannot be
	// kept (the Inbox failed, or the Pipeline is shutting down): the
	// sender of the webhook must deliver it again later.
	ErrRefused = errors.New("delivery: message not kept")
)

// Inbox holds each sender's messages from the moment they are accepted
// until their reply is sent, and remembers for [HandledFor] the ids of the
// messages handled. Meta does not deliver a webhook again once it was
// answered 200, so a message is acknowledged only once Push has returned:
// an Inbox that keeps its messages through a crash ([File] on disk, or one
// on Redis, delivery/redis) makes every acknowledged message answered,
// after a restart if need be. One Inbox shared by several replicas also
// has a sender's messages answered in the order delivered even when
// consecutive ones reach different replicas.
//
// A queue per key is first in, first out:
//   - Push appends the messages of batch, in order, to the ends of their
//     keys' queues, and returns nil only once all are kept: one webhook
//     delivery is one batch, kept in one durable write where the backend
//     allows (a File syncs once a batch). A message whose ID is waiting
//     in the inbox, was handled in the last HandledFor, or comes earlier
//     in the batch is a duplicate: it is not kept, and dup[i] is true;
//     this is the one check of duplicates. On error nothing was kept, as
//     far as the Inbox can tell (after a timeout it cannot: a push of the
//     same messages again finds those kept as duplicates), and dup is nil.
//     It fails, keeping nothing, when a Body is not JSON.
//   - Peek returns the message at the head of key's queue without removing
//     it; ok is false when the queue is empty. m.Sending reports the head's
//     mark of Sending.
//   - Sending is the transition "reply being sent", written before the
//     reply is sent: in one write, it marks the head of key's queue, if
//     its id is id, as having its reply sent (and nothing otherwise). The
//     mark lasts until Done removes the message: it tells the sender's
//     next holder that a reply may have been sent and not recorded, so
//     that it waits for the holder that sent it to record it (see
//     [Options].SendingGrace). A message pushed is unmarked. On error the
//     mark may or may not have been written, and the caller does not send.
//     A durable Inbox keeps the mark as it keeps the queue.
//   - Done is the transition "reply sent", and the only one that removes
//     a message: in one atomic write, it removes the head of key's queue if
//     its id is id (and nothing otherwise, so a repeated Done, or one by a
//     holder that lost its lock, removes nothing else) and records id as
//     handled. On error neither happened.
//   - Keys returns the keys whose queue holds messages, so that a process
//     starting after a crash finds what was left.
//   - Erase removes key's queue and the ids handled for key (Done records
//     the key with each id), and returns how many messages and ids it
//     removed: what mombot erase deletes of a person. Afterwards a
//     redelivery of an erased id is no longer known as a duplicate.
//     Ids handled for key while Erase runs, or by an earlier release,
//     which did not record the key, may be left; they expire after
//     HandledFor.
//   - HandledIDs returns the ids handled in the last HandledFor, each with
//     its key and when it was handled (see [HandledID]), in no particular
//     order; an id waiting is not among them.
//   - RecordHandled records the ids of hs as handled for their keys at
//     their times, so that each is known as long as where it was handled:
//     what [Move] carries to another Inbox. It skips an id that is
//     waiting in the inbox (so it never removes a message), one handled
//     already (which keeps its time: an id handled in both is recorded
//     once), one handled HandledFor ago or earlier, and one that comes
//     earlier in hs; a time after now counts as now. It returns how many
//     it recorded. It writes once where the backend allows (a File: one
//     write, one fsync); on error some may have been recorded, and a call
//     again records the rest.
//
// Implementations must be safe for concurrent use, by every process that
// shares them. Anybody may Push; only the holder of key's [Locker] lock
// peeks at key's queue and calls Sending and Done, which is what makes a message
// handled by one holder at a time.
type Inbox interface {
	Push(ctx context.Context, batch ...Message) (dup []bool, err error)
	Peek(ctx context.Context, key string) (m Message, ok bool, err error)
	Sending(ctx context.Context, key, id string) error
	Done(ctx context.Context, key, id string) error
	Keys(ctx context.Context) ([]string, error)
	Erase(ctx context.Context, key string) (queued, handled int, err error)
	HandledIDs(ctx context.Context) ([]HandledID, error)
	RecordHandled(ctx context.Context, hs ...HandledID) (recorded int, err error)
}

// HandledID is the record an [Inbox] keeps of a message handled, for
// [HandledFor] from At: [Inbox.HandledIDs] lists them and
// [Inbox.RecordHandled] takes them.
type HandledID struct {
	// ID is the message's id.
	ID string
	// Key is its sender, for [Inbox.Erase]; "" for an id recorded by mombot
	// v0.1.0, which did not keep it.
	Key string
	// At is when it was handled, as precise as the Inbox keeps it (a File
	// and its Unix seconds; Redis, milliseconds; PostgreSQL, microseconds),
	// by the clock of the Inbox (the process's; Redis's or the database's).
	At time.Time
}
