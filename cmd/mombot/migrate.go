package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/mombot/mombot/phone"
	"io"
	"strings"
	"time"

	"github.com/mombot/mombot/conversation"
)

// runMigrate copies every live conversation from one store to another:
// mombot history migrate --from URL --to URL.
func runMigrate(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("mombot history migrate", flag.ContinueOnError)
	from := fs.String("from", "", "the store to copy from (a path, file:PATH, sqlite:PATH or redis://HOST:PORT/DB)")
	to := fs.String("to", "", "the store to copy into")
	force := fs.Bool("force", false, "replace a target conversation even when it holds turns the source lacks (saved there since an earlier copy)")
	var cfg memoryConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	if *from == "" || *to == "" || fs.NArg() > 0 {
		return usagef("history migrate: give --from URL and --to URL, and nothing else")
	}
	same, err := sameStore(*from, *to)
	if err != nil {
		return err
	}
	if same {
		return usagef("history migrate: --from and --to name the same store")
	}
	// A mistyped source must not be created empty and copied from.
	src, err := openStoreWith(ctx, *from, storeOptions{mustExist: true}, e)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := openStore(ctx, *to, e)
	if err != nil {
		return err
	}
	defer dst.Close()
	if _, ok := dst.(conversation.Replacer); !ok {
		e.log.Warn("history migrate: the target store cannot replace a conversation atomically; an interrupted copy may leave one partial until migrate runs again")
	}
	r, err := migrate(ctx, src, dst, cfg.timeout, time.Now(), *force, newProgress(e.stderr))
	if err != nil {
		return err
	}
	for _, number := range r.conflicted {
		if *force {
			fmt.Fprintf(e.stderr, "history migrate: %s: replaced turns that only the target held (--force)\n", phone.Mask(number))
		} else {
			fmt.Fprintf(e.stderr, "history migrate: %s: the target holds turns the source lacks (saved there since an earlier copy?); kept the target's. Run with --force to replace it with the source's\n", phone.Mask(number))
		}
	}
	fmt.Fprintf(e.stdout, "copied %d conversations from %s to %s (not copied: %d already there, %d newer in the target, %d in conflict, %d expired, %d empty)\n",
		r.copied, displayStore(*from), displayStore(*to), r.unchanged, r.newer, r.conflicts, r.expired, r.empty)
	return nil
}

// migrateCounts counts what migrate did with each conversation of the source.
type migrateCounts struct {
	copied    int // written to the target
	unchanged int // the target already held the same turns at the same time
	newer     int // the target's conversation was active later: kept
	conflicts int // the target held turns the source lacks: kept (not with force)
	expired   int // expired in the source: left behind
	empty     int // no valid turn left in the source after repair
}

// migrateResult is what migrate did.
type migrateResult struct {
	migrateCounts
	// conflicted are the phones whose target conversation held turns the
	// source lacks: kept, or replaced with force.
	conflicted []string
}

// migrate copies each conversation of src that has not expired at now into
// dst, unless dst holds one for the phone that is as recent or more: that
// one has turns saved since (dst may already serve the live traffic), and
// is kept. Running it again copies nothing more; a conversation continued
// in dst is never rolled back to src's.
//
// A live conversation in dst that is older than src's but holds a turn src
// lacks (the server saved it in dst after an earlier copy, and the old one
// went on saving in src) is a conflict: copying would lose that turn, so it
// is kept and counted, unless force is set. dst may hold fewer turns than
// src (a copy left partial) or lack its oldest (dropped by the turn cap).
func migrate(ctx context.Context, src, dst conversation.Store, timeout time.Duration, now time.Time, force bool, p *progress) (migrateResult, error) {
	var r migrateResult
	sums, err := src.List(ctx)
	if err != nil {
		return r, err
	}
	for i, s := range sums {
		p.show(i, len(sums))
		if conversation.Expired(s.LastActive, now, timeout) {
			r.expired++
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
			r.empty++
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
				r.newer++
				continue
			}
			if theirs.Equal(ours) && sameTurns(cur.Turns, c.Turns) {
				r.unchanged++
				continue
			}
			if !conversation.Expired(cur.LastActive, now, timeout) && !continues(c.Turns, cur.Turns) {
				r.conflicted = append(r.conflicted, s.Phone)
				if !force {
					r.conflicts++
					continue
				}
			}
			// The target's turns are all in the source: an earlier copy,
			// or one that an interruption left partial; bring it up to date.
		}
		replaced, err := replace(ctx, dst, c, timeout)
		if err != nil {
			return r, fmt.Errorf("copy %s: %w", phone.Mask(s.Phone), err)
		}
		if replaced {
			r.copied++
		} else {
			r.newer++ // a turn was saved in the target since we looked
		}
	}
	p.show(len(sums), len(sums))
	p.done()
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

// progress draws a one-line progress bar on w.
type progress struct {
	w    io.Writer
	last int
}

func newProgress(w io.Writer) *progress { return &progress{w: w, last: -1} }

func (p *progress) show(done, total int) {
	if p == nil || total == 0 {
		return
	}
	pct := done * 100 / total
	if pct == p.last {
		return
	}
	p.last = pct
	const width = 30
	fill := done * width / total
	fmt.Fprintf(p.w, "\r[%s%s] %3d%% %d/%d", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, done, total)
}

func (p *progress) done() {
	if p != nil && p.last >= 0 {
		fmt.Fprintln(p.w)
	}
}
