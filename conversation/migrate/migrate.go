// Package migrate copies what one [conversation.Store] holds to another,
// safely enough to run again and again while a server moves from the one to
// the other: live conversations only, never rolling back one continued in
// the target, and never silently losing a turn only the target holds. The
// family's lists are merged into the target's, an item on both kept once.
// The other kinds of record (recent messages, the usage ledger, the
// families' notes) are copied where the target has none under the same
// key.
package migrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
)

// Options configure [Copy]. The zero value means the defaults.
type Options struct {
	// Timeout is the conversation timeout: conversations expired by it are
	// left behind. 0 means conversation.DefaultTimeout.
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Force replaces a target conversation that holds turns the source
	// lacks, instead of keeping it as a conflict.
	Force bool
	// Progress, if set, is called with the conversations done so far and
	// their total, before each and once at the end.
	Progress func(done, total int)
}

// Result counts what Copy did with each conversation of the source, and with
// the other records.
type Result struct {
	Copied    int // written to the target
	Unchanged int // the target already held the same turns at the same time
	Newer     int // the target's conversation was active later: kept
	Conflicts int // the target held turns the source lacks: kept (not with Force)
	Expired   int // expired in the source: left behind
	Empty     int // no valid turn left in the source after repair
	// Conflicted names the conversations (by phone) whose target held
	// turns the source lacks, replaced with Force, kept without.
	Conflicted []string
	// Records counts the other records copied, and RecordsKept those the
	// target already had under the same key (left as they are).
	Records, RecordsKept int
	// ListItems counts the list items the target's lists lacked, merged
	// into them.
	ListItems int
}

// Copy copies src's live conversations, and its other records, to dst.
func Copy(ctx context.Context, src, dst conversation.Store, opts *Options) (Result, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = func(int, int) {}
	}
	memOpts := &conversation.Options{Timeout: o.Timeout, Now: o.Now}
	from, err := conversation.New(src, memOpts)
	if err != nil {
		return Result{}, err
	}
	to, err := conversation.New(dst, memOpts)
	if err != nil {
		return Result{}, err
	}
	var r Result
	sums, err := from.List(ctx)
	if err != nil {
		return r, err
	}
	for i, s := range sums {
		o.Progress(i, len(sums))
		if s.Expired {
			r.Expired++
			continue
		}
		if err := copyConversation(ctx, from, to, s.Phone, o.Force, &r); err != nil {
			return r, fmt.Errorf("copy %s: %w", phone.Mask(s.Phone), err)
		}
	}
	o.Progress(len(sums), len(sums))
	for _, kind := range conversation.Kinds {
		var err error
		switch kind {
		case conversation.Conversations:
			continue
		case conversation.Lists:
			r.ListItems, err = mergeLists(ctx, from, to)
		default:
			err = copyRecords(ctx, src, dst, kind, &r)
		}
		if err != nil {
			return r, fmt.Errorf("copy %s: %w", kind, err)
		}
	}
	return r, nil
}

func copyConversation(ctx context.Context, from, to *conversation.Memory, p string, force bool, r *Result) error {
	c, err := from.Load(ctx, p)
	if errors.Is(err, conversation.ErrNotFound) { // gone since List
		return nil
	}
	if err != nil {
		return err
	}
	if len(c.Turns) == 0 { // every turn dropped by repair
		r.Empty++
		return nil
	}
	c.Version = 0
	cur, err := to.Load(ctx, p)
	switch {
	case errors.Is(err, conversation.ErrNotFound):
	case err != nil:
		return err
	default:
		c.Version = cur.Version
		theirs, ours := cur.LastActive.Truncate(time.Microsecond), c.LastActive.Truncate(time.Microsecond)
		if theirs.After(ours) {
			r.Newer++
			return nil
		}
		if theirs.Equal(ours) && sameTurns(cur.Turns, c.Turns) {
			r.Unchanged++
			return nil
		}
		if !to.Expired(cur.LastActive) && !continues(c.Turns, cur.Turns) {
			r.Conflicted = append(r.Conflicted, p)
			if !force {
				r.Conflicts++
				return nil
			}
		}
	}
	err = to.Replace(ctx, c)
	switch {
	case errors.Is(err, conversation.ErrConflict):
		r.Newer++ // a turn was saved in the target since we looked
	case err != nil:
		return err
	default:
		r.Copied++
	}
	return nil
}

// mergeLists merges the family's lists of from into those of to, and
// returns how many items it added.
func mergeLists(ctx context.Context, from, to *conversation.Memory) (added int, err error) {
	in, err := from.FamilyLists(ctx)
	if err != nil || len(in.Lists)+len(in.Removed) == 0 {
		return 0, err
	}
	err = to.UpdateFamilyLists(ctx, func(l *conversation.FamilyLists) error {
		added = l.Merge(in)
		return nil
	})
	return added, err
}

// copyRecords copies every record of kind that dst lacks.
func copyRecords(ctx context.Context, src, dst conversation.Store, kind conversation.Kind, r *Result) error {
	recs, err := src.List(ctx, kind, "")
	if err != nil {
		return err
	}
	for _, rec := range recs {
		rec.Version = 0
		_, err := dst.Put(ctx, kind, rec, 0)
		switch {
		case errors.Is(err, conversation.ErrConflict):
			r.RecordsKept++
		case err != nil:
			return err
		default:
			r.Records++
		}
	}
	return nil
}

// continues reports whether dst's turns are a run of src's from its start
// on: what the target holds is an earlier copy of the source, which the
// source has continued since.
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
	return slices.EqualFunc(a, b, func(x, y conversation.Turn) bool {
		jx, errx := x.MarshalJSON()
		jy, erry := y.MarshalJSON()
		return errx == nil && erry == nil && bytes.Equal(jx, jy)
	})
}
