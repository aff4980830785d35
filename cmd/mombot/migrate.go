package main

import (
	"context"
	"fmt"

	"github.com/mombot/mombot/conversation/migrate"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/phone"
)

const migrateUsage = `Usage: mombot history migrate --from URL --to URL [--force]

Copies every live conversation from one store to another; the source is
only read. Flags:`

// runMigrate copies every live conversation from one store to another:
// mombot history migrate --from URL --to URL.
func runMigrate(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("mombot history migrate", migrateUsage)
	from := fs.String("from", "", "the store to copy from (a path, file:PATH, sqlite:PATH, redis://HOST:PORT/DB or postgres://USER@HOST:PORT/DB)")
	to := fs.String("to", "", "the store to copy into")
	force := fs.Bool("force", false, "replace a target conversation even when it holds turns the source lacks (saved there since an earlier copy)")
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
	fmt.Fprintf(e.stdout, "copied %s from %s to %s (not copied: %d already there, %d newer in the target, %d in conflict, %d expired, %d empty); %s of usage and recent messages copied, %d already there\n",
		cli.Plural(r.Copied, "conversation", "conversations"), storeurl.Display(*from), storeurl.Display(*to), r.Unchanged, r.Newer, r.Conflicts, r.Expired, r.Empty,
		cli.Plural(r.Records, "record", "records"), r.RecordsKept)
	return nil
}
