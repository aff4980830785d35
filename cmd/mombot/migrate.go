package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/migrate"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/phone"
	"golang.org/x/term"
)

const migrateUsage = `Usage: mombot history migrate --from URL --to URL [--force]

Copies every live conversation from one store to another; the source is
only read. Flags:`

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
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), migrateUsage)
		fs.PrintDefaults()
	}
	extra, err := parseInterleaved(fs, e, args)
	if err != nil {
		return err
	}
	if *from == "" || *to == "" || len(extra) > 0 {
		return usagef("history migrate: give --from URL and --to URL, and nothing else")
	}
	same, err := storeurl.Same(*from, *to)
	if err != nil {
		return err
	}
	if same {
		return usagef("history migrate: --from and --to name the same store")
	}
	// A mistyped source must not be created empty and copied from, and a
	// damaged one must be reported, not moved aside and copied as empty.
	src, err := storeurl.Open(ctx, *from, &storeurl.Options{Logger: e.log, MustExist: true, ReadOnly: true})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := storeurl.Open(ctx, *to, &storeurl.Options{Logger: e.log})
	if err != nil {
		return err
	}
	defer dst.Close()
	if _, ok := dst.(conversation.Replacer); !ok {
		e.log.Warn("history migrate: the target store cannot replace a conversation atomically; an interrupted copy may leave one partial until migrate runs again")
	}
	p := newProgress(e.stderr)
	r, err := migrate.Copy(ctx, src, dst, &migrate.Options{Timeout: cfg.timeout, Force: *force, Progress: p.show})
	p.done()
	if err != nil {
		return err
	}
	for _, number := range r.Conflicted {
		if *force {
			fmt.Fprintf(e.stderr, "history migrate: %s: replaced turns that only the target held (--force)\n", phone.Mask(number))
		} else {
			fmt.Fprintf(e.stderr, "history migrate: %s: the target holds turns the source lacks (saved there since an earlier copy?); kept the target's. Run with --force to replace it with the source's\n", phone.Mask(number))
		}
	}
	fmt.Fprintf(e.stdout, "copied %s from %s to %s (not copied: %d already there, %d newer in the target, %d in conflict, %d expired, %d empty)\n",
		plural(r.Copied, "conversation", "conversations"), storeurl.Display(*from), storeurl.Display(*to), r.Unchanged, r.Newer, r.Conflicts, r.Expired, r.Empty)
	return nil
}

// progress draws a one-line progress bar on w.
type progress struct {
	w    io.Writer
	last int
}

// newProgress returns a progress bar on w, or nil (which draws nothing)
// when w is not a terminal: its \r frames would fill a log or a pipe.
func newProgress(w io.Writer) *progress {
	if !isTerminal(w) {
		return nil
	}
	return &progress{w: w, last: -1}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

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
