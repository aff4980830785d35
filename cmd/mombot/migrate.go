package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/mombot/mombot/conversation/migrate"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/phone"
)

const migrateUsage = `Usage: mombot history migrate --from URL --to URL [--force] [--inbox]

Copies every live conversation from one store to another, with the usage
ledger, the recent messages, the notes and the summaries, and merges the family's lists
into the target's; the source is only read. With --inbox, the WhatsApp
messages queued in the source's inbox and not yet answered move to the
target's, and the ids of those answered in the last 7 days are recorded
there, so that a late redelivery is not answered again: stop serve on the
source first. Flags:`

// runMigrate copies every live conversation from one store to another:
// mombot history migrate --from URL --to URL.
func runMigrate(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("mombot history migrate", migrateUsage)
	from := fs.String("from", "", "the store to copy from (a path, file:PATH, sqlite:PATH, redis://HOST:PORT/DB or postgres://USER@HOST:PORT/DB)")
	to := fs.String("to", "", "the store to copy into")
	force := fs.Bool("force", false, "replace a target conversation even when it holds turns the source lacks (saved there since an earlier copy)")
	moveInbox := fs.Bool("inbox", false, "move the WhatsApp messages waiting in the source's inbox, not yet answered, and the ids of those answered in the last 7 days, to the target's (stop serve on the source first)")
	var cfg memoryConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	extra, err := cli.ParseInterleaved(fs, e.stderr, args)
	if err != nil {
		return err
	}
	if *from == "" || *to == "" || len(extra) > 0 {
		return cli.Usagef("history migrate: give --from URL and --to URL, and nothing else")
	}
	same, err := storeurl.Same(*from, *to)
	if err != nil {
		return err
	}
	if same {
		return cli.Usagef("history migrate: --from and --to name the same store")
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
	p := cli.NewProgress(e.stderr)
	r, err := migrate.Copy(ctx, src, dst, &migrate.Options{Timeout: cfg.timeout, Force: *force, Progress: p.Show})
	p.Done()
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
	fmt.Fprintf(e.stdout, "copied %s from %s to %s (not copied: %d already there, %d newer in the target, %d in conflict, %d expired, %d empty); %s of usage, recent messages, notes and summaries copied, %d already there; %s merged into the lists\n",
		cli.Plural(r.Copied, "conversation", "conversations"), storeurl.Display(*from), storeurl.Display(*to), r.Unchanged, r.Newer, r.Conflicts, r.Expired, r.Empty,
		cli.Plural(r.Records, "record", "records"), r.RecordsKept, cli.Plural(r.ListItems, "item", "items"))
	if sharedInbox(*from, *to) {
		return nil // serve on either store answers what waits in it
	}
	if *moveInbox {
		moved, handled, err := migrateInbox(ctx, e, *from, *to)
		if err != nil {
			return fmt.Errorf("history migrate: inbox: moved %d messages and %d handled ids, then: %w", moved, handled, err)
		}
		fmt.Fprintf(e.stdout, "moved %s waiting in the inbox and %s handled in the last 7 days\n",
			cli.Plural(moved, "message", "messages"), cli.Plural(handled, "id of a message", "ids of messages"))
		return nil
	}
	waiting, err := inboxSenders(ctx, e, *from)
	switch {
	case err != nil:
		fmt.Fprintf(e.stderr, "history migrate: could not read the source's inbox: %v\n", err)
	case waiting > 0:
		fmt.Fprintf(e.stderr, "history migrate: %s waiting in the source's inbox, acknowledged to WhatsApp and not yet answered; they stay there. Stop serve on the source and run again with --inbox to move them, or they are never answered\n",
			cli.Plural(waiting, "sender has messages", "senders have messages"))
	}
	return nil
}

// sharedInbox reports whether the stores at from and to keep one inbox
// file: two file: or sqlite: stores in one folder.
func sharedInbox(from, to string) bool {
	a, errA := storeurl.Parse(from)
	b, errB := storeurl.Parse(to)
	local := func(k string) bool { return k != storeurl.Redis && k != storeurl.Postgres }
	if errA != nil || errB != nil || !local(a.Kind) || !local(b.Kind) {
		return false
	}
	pa, errA := filepath.Abs(inboxFile(from))
	pb, errB := filepath.Abs(inboxFile(to))
	return errA == nil && errB == nil && pa == pb
}

// inboxSenders returns how many senders have messages waiting in the inbox
// serve keeps with the store at storeURL.
func inboxSenders(ctx context.Context, e *env, storeURL string) (int, error) {
	n := 0
	err := withExistingInbox(ctx, e, storeURL, func(_ *senders, in delivery.Inbox) error {
		keys, err := in.Keys(ctx)
		n = len(keys)
		return err
	})
	return n, err
}

// migrateInbox moves the messages waiting in the inbox serve keeps with the
// store at from to the one it keeps with the store at to, under the
// source's sender locks, then the ids of the messages handled, and returns
// how many messages it moved and ids it recorded in the target.
func migrateInbox(ctx context.Context, e *env, from, to string) (moved, handled int, err error) {
	err = withExistingInbox(ctx, e, from, func(src *senders, in delivery.Inbox) error {
		dst, err := openSenders(ctx, to, e.log)
		if err != nil {
			return err
		}
		defer dst.close()
		out, err := dst.inbox(ctx, 0, e.log)
		if err != nil {
			return err
		}
		if c, ok := out.(io.Closer); ok {
			defer c.Close()
		}
		moved, handled, err = delivery.Move(ctx, in, out, src.locker)
		return err
	})
	return moved, handled, err
}

// withExistingInbox calls f with the inbox serve keeps with the store at
// storeURL, and its senders, then closes them; it calls nothing when serve
// never kept one beside a file: or sqlite: store.
func withExistingInbox(ctx context.Context, e *env, storeURL string, f func(*senders, delivery.Inbox) error) error {
	snd, err := openSenders(ctx, storeURL, e.log)
	if err != nil {
		return err
	}
	defer snd.close()
	in, err := snd.existingInbox(ctx, e.log)
	if err != nil || in == nil {
		return err
	}
	if c, ok := in.(io.Closer); ok {
		defer c.Close()
	}
	return f(snd, in)
}
