package delivery

import (
	"context"
	"fmt"
	"slices"

	"github.com/mombot/mombot/phone"
)

// Move moves the messages queued in src, acknowledged and not yet
// answered, to dst, each sender's in order, then records in dst the ids
// src handled in the last [HandledFor], and returns how many messages it
// moved and how many ids it recorded: what a deployment moving from one
// store to another takes with it, so that a redelivery to dst of a
// message src answered is a duplicate there too. It holds each sender's
// lock from locker, src's, while it moves that sender's messages, so that
// a process still draining src on a shared store answers a message before
// or not at all; with a [Local] locker no other process may be using src.
//
// Each message is pushed to dst and then marked done in src, which records
// it there as handled: a message is answered by whichever side holds it
// queued, and a redelivery to src is a duplicate. After a failure between
// the two, the message is queued in both; a Move again removes it from src
// (dst already holds it, a duplicate).
//
// The ids handled go with their senders, so that [Inbox.Erase] on dst
// finds them, and their times, so that they expire in dst when they
// would have in src; [Inbox.RecordHandled] leaves alone an id waiting in
// dst (among them those Move just moved) or handled there already, so a
// Move again records nothing twice. They go after the messages, in
// batches of moveBatch.
//
// A message marked by [Inbox.Sending] in src moves unmarked (Push takes
// no mark): its reply may have been sent by a holder on src that never
// recorded it, and dst's holder answers it at once, as after a crash
// between a send and its Done. Stop the processes answering src before a
// Move, as mombot history migrate --inbox asks.
func Move(ctx context.Context, src, dst Inbox, locker Locker) (moved, handled int, err error) {
	keys, err := src.Keys(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("delivery: move: %w", err)
	}
	for _, key := range keys {
		n, err := moveKey(ctx, src, dst, locker, key)
		moved += n
		if err != nil {
			return moved, 0, fmt.Errorf("delivery: move %s: %w", phone.Mask(key), err)
		}
	}
	hs, err := src.HandledIDs(ctx)
	if err != nil {
		return moved, 0, fmt.Errorf("delivery: move the ids handled: %w", err)
	}
	for batch := range slices.Chunk(hs, moveBatch) {
		n, err := dst.RecordHandled(ctx, batch...)
		handled += n
		if err != nil {
			return moved, handled, fmt.Errorf("delivery: move the ids handled: %w", err)
		}
	}
	return moved, handled, nil
}

// moveBatch is how many handled ids Move records in dst at a time, which
// bounds one write (one Redis script, one statement).
const moveBatch = 1000

// moveKey moves key's queue under key's lock.
func moveKey(ctx context.Context, src, dst Inbox, locker Locker, key string) (moved int, err error) {
	held, unlock, err := locker.Lock(ctx, key)
	if err != nil {
		return 0, err
	}
	defer unlock()
	for {
		if held.Err() != nil {
			return moved, context.Cause(held)
		}
		m, ok, err := src.Peek(ctx, key)
		if err != nil || !ok {
			return moved, err
		}
		if _, err := dst.Push(ctx, m); err != nil {
			return moved, err
		}
		if err := src.Done(ctx, key, m.ID); err != nil {
			return moved, err
		}
		moved++
	}
}
