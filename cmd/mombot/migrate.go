package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
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
	if *from == *to {
		return usagef("history migrate: --from and --to name the same store")
	}
	src, err := openStore(ctx, *from, cfg.timeout, e)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := openStore(ctx, *to, cfg.timeout, e)
	if err != nil {
		return err
	}
	defer dst.Close()
	n, skipped, err := migrate(ctx, src, dst, cfg.timeout, time.Now(), newProgress(e.stderr))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "copied %d conversations from %s to %s (%d expired, not copied)\n", n, *from, *to, skipped)
	return nil
}

// migrate copies each conversation of src that has not expired at now into
// dst, replacing what dst held for that phone, so running it again gives the
// same result. It returns how many it copied and how many it skipped.
func migrate(ctx context.Context, src, dst conversation.Store, timeout time.Duration, now time.Time, p *progress) (copied, skipped int, err error) {
	sums, err := src.List(ctx)
	if err != nil {
		return 0, 0, err
	}
	for i, s := range sums {
		p.show(i, len(sums))
		if conversation.Expired(s.LastActive, now, timeout) {
			skipped++
			continue
		}
		c, err := src.Load(ctx, s.Phone)
		if errors.Is(err, conversation.ErrNotFound) { // gone since List
			continue
		}
		if err != nil {
			return copied, skipped, err
		}
		if err := replace(ctx, dst, c, timeout); err != nil {
			return copied, skipped, fmt.Errorf("copy %s: %w", conversation.MaskPhone(s.Phone), err)
		}
		copied++
	}
	p.show(len(sums), len(sums))
	p.done()
	return copied, skipped, nil
}

// replace makes dst hold exactly c for c.Phone: it deletes what was there
// and appends c's turns at c's last activity, keeping them all. Every turn
// is appended at the same time, so none of them expires the others; the
// timeout is what stores with key expiry (Redis) set the keys' lifetime by.
func replace(ctx context.Context, dst conversation.Store, c conversation.Conversation, timeout time.Duration) error {
	if err := dst.Delete(ctx, c.Phone); err != nil && !errors.Is(err, conversation.ErrNotFound) {
		return err
	}
	keepAll := conversation.Limits{Timeout: timeout, MaxTurns: len(c.Turns)}
	for _, t := range c.Turns {
		if err := dst.Append(ctx, c.Phone, t, c.LastActive, keepAll); err != nil {
			return err
		}
	}
	return nil
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
