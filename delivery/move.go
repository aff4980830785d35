package delivery

import (
	"context"
	"fmt"

	"github.com/mombot/mombot/phone"
)

// Move moves the messages queued in src, acknowledged and not yet
// answered, to dst, each sender's in order, and returns how many it moved:
// what a deployment moving from one store to another takes with it. It
// holds each sender's lock from locker, src's, while it moves that
// sender's messages, so that a process still draining src on a shared
// store answers a message before or not at all; with a [Local] locker no
// other process may be using src.
//
// Each message is pushed to dst and then marked done in src, which records
// it there as handled: a message is answered by whichever side holds it
// queued, and a redelivery to src is a duplicate. After a failure between
// the two, the message is queued in both; a Move again removes it from src
// (dst already holds it, a duplicate).
//
// A message marked by [Inbox.Sending] in src moves unmarked (Push takes
// no mark): its reply may have been sent by a holder on src that never
// recorded it, and dst's holder answers it at once, as after a crash
// between a send and its Done. Stop the processes answering src before a
// Move, as mombot history migrate --inbox asks.
func Move(ctx context.Context, src, dst Inbox, locker Locker) (moved int, err error) {
	keys, err := src.Keys(ctx)
	if err != nil {
		return 0, fmt.Errorf("delivery: move: %w", err)
	}
	for _, key := range keys {
		n, err := moveKey(ctx, src, dst, locker, key)
		moved += n
		if err != nil {
			return moved, fmt.Errorf("delivery: move %s: %w", phone.Mask(key), err)
		}
	}
	return moved, nil
}

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
