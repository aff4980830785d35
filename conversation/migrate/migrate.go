// Package migrate copies conversations from one [conversation.Store] to
// another, safely enough to run again and again while a server moves from
// the one to the other: live conversations only, never rolling back one
// continued in the target, and never silently losing a turn only the
// target holds.
package migrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
)

// Options configure [Copy]. The zero value means the defaults.
type Options struct {
	// Timeout is the inactivity after which a conversation has expired
	// and is left behind; 0 means conversation.DefaultTimeout.
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Force replaces a target conversation that holds turns the source
	// lacks (a conflict), rather than keeping it.
	Force bool
	// Progress, if set, is called before each conversation with how many
	// are done and how many there are, and once at the end.
	Progress func(done, total int)
}

// Result counts what Copy did with each conversation of the source.
type Result struct {
	Copied    int // written to the target
	Unchanged int // the target already held the same turns at the same time
	Newer     int // the target's conversation was active later: kept
	Conflicts int // the target held turns the source lacks: kept (not with Force)
	Expired   int // expired in the source: left behind
	Empty     int // no valid turn left in the source after repair
	// Conflicted are the phones whose target conversation held turns the
	// source lacks: kept, or replaced with Force.
	Conflicted []string
}

// Copy copies each conversation of src that has not expired into dst,
// unless dst holds one for the phone that is as recent or more: that one
// has turns saved since (dst may already serve the live traffic), and is
// kept. Running it again copies nothing more; a conversation continued in
// dst is never rolled back to src's. Each copy is one atomic write where
// dst is a [conversation.Replacer].
//
// A live conversation in dst that is older than src's but holds a turn src
// lacks (the server saved it in dst after an earlier copy, and the old one
// went on saving in src) is a conflict: copying would lose that turn, so it
// is kept and counted, unless Force is set. dst may hold fewer turns than
// src (a copy left partial) or lack its oldest (dropped by the turn cap).
//
// The system sender's conversation is never copied. Copy stops at the
// first error of either store, returning what it did so far.
func Copy(ctx context.Context, src, dst conversation.Store, opts *Options) (Result, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = conversation.DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = func(int, int) {}
	}
	now := o.Now()
	var r Result
	sums, err := src.List(ctx)
	if err != nil {
		return r, err
	}
	for i, s := range sums {
		o.Progress(i, len(sums))
		if conversation.Expired(s.LastActive, now, o.Timeout) {
			r.Expired++
			continue
		}
		if s.Phone == conversation.SystemSender {
			continue // never stored by mombot; never copied either
		}
		c, err := src.Load(ctx, s.Phone)
		if errors.Is(err, conversation.ErrNotFound) { // gone since List
			continue
		}
		if err != nil {
			return r, err
		}
		if len(c.Turns) == 0 { // every turn dropped by repair
			r.Empty++
			continue
		}
		cur, err := dst.Load(ctx, s.Phone)
		switch {
		case errors.Is(err, conversation.ErrNotFound):
		case err != nil:
			return r, fmt.Errorf("copy %s: %w", phone.Mask(s.Phone), err)
		default:
			// Stores keep at least microseconds.
			theirs, ours := cur.LastActive.Truncate(time.Microsecond), c.LastActive.Truncate(time.Microsecond)
			if theirs.After(ours) {
				r.Newer++
				continue
			}
			if theirs.Equal(ours) && sameTurns(cur.Turns, c.Turns) {
				r.Unchanged++
				continue
			}
			if !conversation.Expired(cur.LastActive, now, o.Timeout) && !continues(c.Turns, cur.Turns) {
				r.Conflicted = append(r.Conflicted, s.Phone)
				if !o.Force {
					r.Conflicts++
					continue
				}
			}
			// The target's turns are all in the source: an earlier copy,
			// or one that an interruption left partial; bring it up to date.
		}
		replaced, err := replace(ctx, dst, c, o.Timeout)
		if err != nil {
			return r, fmt.Errorf("copy %s: %w", phone.Mask(s.Phone), err)
		}
		if replaced {
			r.Copied++
		} else {
			r.Newer++ // a turn was saved in the target since we looked
		}
	}
	o.Progress(len(sums), len(sums))
	return r, nil
}

// continues reports whether src holds every turn of dst: dst's turns, less
// some of the oldest (which the turn cap dropped from src since), are the
// first of src's, byte for byte.
func continues(src, dst []conversation.Turn) bool {
	for k := range dst {
		rest := dst[k:]
		if len(rest) <= len(src) && sameTurns(src[:len(rest)], rest) {
			return true
		}
	}
	return len(dst) == 0
}

// sameTurns reports whether a and b are the same turns, byte for byte.
func sameTurns(a, b []conversation.Turn) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ja, erra := a[i].MarshalJSON()
		jb, errb := b[i].MarshalJSON()
		if erra != nil || errb != nil || !bytes.Equal(ja, jb) {
			return false
		}
	}
	return true
}

// replace makes dst hold exactly c for c.Phone unless dst's conversation is
// newer, in one atomic step where dst is a [conversation.Replacer]. Other
// stores get a delete and then c's turns appended at c's last activity,
// keeping them all; a crash in between leaves part of c, which the next
// run completes, and a turn saved in between may be overwritten.
func replace(ctx context.Context, dst conversation.Store, c conversation.Conversation, timeout time.Duration) (bool, error) {
	if r, ok := dst.(conversation.Replacer); ok {
		return r.Replace(ctx, c, timeout)
	}
	if err := dst.Delete(ctx, c.Phone); err != nil && !errors.Is(err, conversation.ErrNotFound) {
		return false, err
	}
	// Every turn is appended at the same time, so none expires the
	// others; the timeout is what stores with key expiry set the keys'
	// lifetime by.
	keepAll := conversation.Limits{Timeout: timeout, MaxTurns: len(c.Turns)}
	for _, t := range c.Turns {
		if err := dst.Append(ctx, c.Phone, t, c.LastActive, keepAll); err != nil {
			return false, err
		}
	}
	return true, nil
}
