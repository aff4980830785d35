package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mombot/mombot/delivery"
)

// sweepEvery is how often, at most, a Done of an Inbox deletes the handled
// rows older than delivery.HandledFor.
const sweepEvery = time.Hour

// InboxOptions configure [NewInbox]. The zero value means the defaults.
type InboxOptions struct {
	// Schema holds the tables; "" means DefaultSchema. mombot serve uses
	// the conversation store's (its URL's ?schema=).
	Schema string
}

// Inbox is a [delivery.Inbox] shared by every process on the database: the
// webhook server keeps each sender's messages in it from their
// acknowledgement until their reply is sent, so that whichever replica
// answers them takes them in the order they arrived, a replica that dies
// while answering leaves them to another, and a message delivered twice,
// to one replica or to two, is answered once. It is safe for concurrent
// use. See the package doc for its table.
type Inbox struct {
	pool *pgxpool.Pool
	t    tables

	push, peek, sending, head, done, record, keys, erase, sweep, handled, recordAt string

	mu    sync.Mutex
	swept time.Time // the last clean-up of handled rows, by this Inbox
}

var _ delivery.Inbox = (*Inbox)(nil)

// NewInbox returns an Inbox on pool, setting up its tables in the schema
// if need be.
func NewInbox(ctx context.Context, pool *pgxpool.Pool, opts *InboxOptions) (*Inbox, error) {
	var o InboxOptions
	if opts != nil {
		o = *opts
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if err := migrate(ctx, pool, o.Schema); err != nil {
		return nil, fmt.Errorf("postgres: inbox: set up the tables in schema %s: %w", o.Schema, err)
	}
	q := &Inbox{pool: pool, t: tables{o.Schema}}
	inbox := q.t.name("inbox")
	q.push = `INSERT INTO ` + inbox + ` (id, sender, body) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`
	q.peek = `SELECT id, body, sending FROM ` + inbox + ` WHERE sender = $1 AND handled_at IS NULL ORDER BY seq LIMIT 1`
	q.sending = `UPDATE ` + inbox + ` SET sending = true WHERE id = $2 AND NOT sending AND id = (SELECT id FROM ` + inbox +
		` WHERE sender = $1 AND handled_at IS NULL ORDER BY seq LIMIT 1)`
	q.head = `SELECT id FROM ` + inbox + ` WHERE sender = $1 AND handled_at IS NULL ORDER BY seq LIMIT 1 FOR UPDATE`
	q.done = `UPDATE ` + inbox + ` SET handled_at = now(), body = NULL, sending = false WHERE id = $1`
	q.record = `INSERT INTO ` + inbox + ` (id, sender, handled_at) VALUES ($1, $2, now()) ON CONFLICT (id) DO NOTHING`
	q.keys = `SELECT DISTINCT sender FROM ` + inbox + ` WHERE handled_at IS NULL`
	q.erase = `DELETE FROM ` + inbox + ` WHERE sender = $1 RETURNING handled_at IS NULL`
	q.sweep = `DELETE FROM ` + inbox + ` WHERE handled_at < now() - make_interval(secs => $1)`
	q.handled = `SELECT id, sender, handled_at FROM ` + inbox + ` WHERE handled_at > now() - make_interval(secs => $1)`
	q.recordAt = `INSERT INTO ` + inbox + ` (id, sender, handled_at)
		SELECT h.id, h.sender, least(h.at, now()) FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS h(id, sender, at)
		WHERE h.at > now() - make_interval(secs => $4)
		ON CONFLICT (id) DO NOTHING`
	return q, nil
}

// Push implements [delivery.Inbox]: one transaction for the batch, which
// takes the advisory lock of each of its senders (in order, so that two
// batches never wait for each other in a circle), so that one sender's
// pushes commit in the order of their seq, and inserts each message unless
// its id is there (or came earlier in the batch). Once it returns nil the
// messages are committed.
func (q *Inbox) Push(ctx context.Context, batch ...delivery.Message) ([]bool, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	bodies := make([][]byte, len(batch))
	var senders []string
	for i, m := range batch {
		var b bytes.Buffer
		if err := json.Compact(&b, m.Body); err != nil {
			return nil, fmt.Errorf("delivery: message %s: body is not JSON: %w", m.ID, err)
		}
		bodies[i] = b.Bytes()
		senders = append(senders, m.Key)
	}
	slices.Sort(senders)
	dup := make([]bool, len(batch))
	err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		for _, key := range slices.Compact(senders) {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(q.t.schema, "push\x00"+key)); err != nil {
				return err
			}
		}
		for i, m := range batch {
			tag, err := tx.Exec(ctx, q.push, m.ID, m.Key, bodies[i])
			if err != nil {
				return err
			}
			dup[i] = tag.RowsAffected() == 0
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: inbox push: %w", err)
	}
	return dup, nil
}

// Peek implements [delivery.Inbox].
func (q *Inbox) Peek(ctx context.Context, key string) (delivery.Message, bool, error) {
	m := delivery.Message{Key: key}
	err := q.pool.QueryRow(ctx, q.peek, key).Scan(&m.ID, &m.Body, &m.Sending)
	if errors.Is(err, pgx.ErrNoRows) {
		return delivery.Message{}, false, nil
	}
	if err != nil {
		return delivery.Message{}, false, fmt.Errorf("postgres: inbox peek: %w", err)
	}
	return m, true, nil
}

// Sending implements [delivery.Inbox]: one statement, which marks the row
// of id if it is the head of key's queue.
func (q *Inbox) Sending(ctx context.Context, key, id string) error {
	if _, err := q.pool.Exec(ctx, q.sending, key, id); err != nil {
		return fmt.Errorf("postgres: inbox sending: %w", err)
	}
	return nil
}

// Done implements [delivery.Inbox]: one transaction that locks the head
// of key's queue and, if it is the message, marks it handled and drops its
// body; otherwise it records id as handled unless the id is there already.
func (q *Inbox) Done(ctx context.Context, key, id string) error {
	err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		var head string
		err := tx.QueryRow(ctx, q.head, key).Scan(&head)
		switch {
		case err == nil && head == id:
			_, err = tx.Exec(ctx, q.done, id)
			return err
		case err == nil, errors.Is(err, pgx.ErrNoRows):
			_, err = tx.Exec(ctx, q.record, id, key)
			return err
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: inbox done: %w", err)
	}
	q.maybeSweep(ctx)
	return nil
}

// maybeSweep deletes the handled rows older than delivery.HandledFor, if
// this Inbox has not done so for sweepEvery. A failure is left to the
// next.
func (q *Inbox) maybeSweep(ctx context.Context) {
	q.mu.Lock()
	due := time.Since(q.swept) >= sweepEvery
	if due {
		q.swept = time.Now()
	}
	q.mu.Unlock()
	if due {
		_, _ = q.pool.Exec(ctx, q.sweep, delivery.HandledFor.Seconds())
	}
}

// Keys implements [delivery.Inbox]: the senders with messages waiting.
func (q *Inbox) Keys(ctx context.Context) ([]string, error) {
	rows, err := q.pool.Query(ctx, q.keys)
	if err != nil {
		return nil, fmt.Errorf("postgres: inbox keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: inbox keys: %w", err)
	}
	return keys, nil
}

// Erase implements [delivery.Inbox]: one statement deletes key's rows,
// waiting and handled. The rows are gone from the table; the database's
// write-ahead log, its backups and replicas hold older copies until they
// are recycled, which is the operator's to know.
func (q *Inbox) Erase(ctx context.Context, key string) (queued, handled int, err error) {
	rows, err := q.pool.Query(ctx, q.erase, key)
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: inbox erase: %w", err)
	}
	waiting, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: inbox erase: %w", err)
	}
	for _, w := range waiting {
		if w {
			queued++
		} else {
			handled++
		}
	}
	return queued, handled, nil
}

// HandledIDs implements [delivery.Inbox]: the handled rows younger than
// delivery.HandledFor by the database's clock.
func (q *Inbox) HandledIDs(ctx context.Context) ([]delivery.HandledID, error) {
	rows, err := q.pool.Query(ctx, q.handled, delivery.HandledFor.Seconds())
	if err != nil {
		return nil, fmt.Errorf("postgres: inbox handled ids: %w", err)
	}
	hs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (delivery.HandledID, error) {
		var h delivery.HandledID
		err := row.Scan(&h.ID, &h.Key, &h.At)
		h.At = h.At.UTC()
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: inbox handled ids: %w", err)
	}
	return hs, nil
}

// RecordHandled implements [delivery.Inbox]: one statement inserts a
// handled row for each id younger than delivery.HandledFor, by the
// database's clock, unless its id is there (waiting or handled), as Push
// does.
func (q *Inbox) RecordHandled(ctx context.Context, hs ...delivery.HandledID) (int, error) {
	if len(hs) == 0 {
		return 0, nil
	}
	ids, senders, ats := make([]string, 0, len(hs)), make([]string, 0, len(hs)), make([]time.Time, 0, len(hs))
	for _, h := range hs {
		if h.ID != "" {
			ids, senders, ats = append(ids, h.ID), append(senders, h.Key), append(ats, h.At)
		}
	}
	tag, err := q.pool.Exec(ctx, q.recordAt, ids, senders, ats, delivery.HandledFor.Seconds())
	if err != nil {
		return 0, fmt.Errorf("postgres: inbox record handled: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
