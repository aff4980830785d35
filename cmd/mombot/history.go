package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/internal/cli"
)

const historyUsage = `Usage:
  mombot history list [--full]           phones with last activity, turns and state
  mombot history show [--json] PHONE     a readable transcript, or (--json) the messages exactly as sent to Claude
  mombot history clear PHONE             forget a person's conversation (their usage stays: mombot usage)
  mombot history migrate --from URL --to URL [--force] [--inbox]
                                         copy every live conversation to another store
                                         (mombot help history migrate: its flags)

Flags (anywhere on the line):`

func runHistory(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] == "migrate" {
		return runMigrate(ctx, e, args[1:])
	}
	fs := cli.NewFlagSet("mombot history", historyUsage)
	var cfg memoryConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	full := fs.Bool("full", false, "list: show whole phone numbers instead of masking them")
	asJSON := fs.Bool("json", false, "show: print the message list exactly as it is sent to Claude, as one line of JSON")
	// Flags may come anywhere: history --full list, history list --full,
	// history show +14155551234 --json.
	pos, err := cli.ParseInterleaved(fs, e.stderr, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return cli.Usagef("history: which sub-command? list, show or clear (see mombot history -h)")
	}
	sub, rest := pos[0], pos[1:]
	want := map[string]int{"list": 0, "show": 1, "clear": 1}
	n, ok := want[sub]
	switch {
	case !ok:
		return cli.Usagef("history: unknown sub-command %q%s; use list, show, clear or migrate", sub, cli.DidYouMean(sub, []string{"list", "show", "clear", "migrate"}))
	case len(rest) > n && n == 0:
		return cli.Usagef("history %s takes no arguments, got %q", sub, strings.Join(rest, " "))
	case len(rest) > n:
		return cli.Usagef("history %s takes one phone number; %q is extra", sub, strings.Join(rest[n:], " "))
	case len(rest) < n:
		return cli.Usagef("history %s: give exactly one phone number, like +14155551234", sub)
	}
	// list and show only look: they create no file, not even a lock, and
	// report a damaged file instead of moving it aside.
	cfg.readOnly = sub != "clear"
	mem, store, err := openForHistory(ctx, e, &cfg)
	var nf noStoreFileError
	if errors.As(err, &nf) && nf.defaulted && sub == "list" {
		// A fresh clone: nothing has been saved, which is not a mistake.
		fmt.Fprintf(e.stdout, "no conversations stored yet (%s does not exist; the first saved turn creates it)\n", nf.path)
		return nil
	}
	if err != nil {
		return err
	}
	defer store.Close()
	switch sub {
	case "list":
		return historyList(ctx, e.stdout, mem, *full)
	case "show":
		return historyShow(ctx, e.stdout, mem, rest[0], *asJSON)
	default:
		return historyClear(ctx, e.stdout, mem, rest[0])
	}
}

// noStoreFileError says that the JSON file a history command should read is
// not there.
type noStoreFileError struct {
	path      string
	defaulted bool // the default path, not one given by --store or MOMBOT_STORE
}

func (e noStoreFileError) Error() string {
	if e.defaulted {
		return fmt.Sprintf("no conversations stored yet (%s does not exist)", e.path)
	}
	return fmt.Sprintf("no conversations file at %s (check --store or MOMBOT_STORE)", e.path)
}

// openForHistory opens the configured store for list, show and clear. These
// only look at conversations or remove them, so a JSON file must already
// exist: a mistyped --store is reported, and no folder, file or lock file is
// created for it.
func openForHistory(ctx context.Context, e *env, cfg *memoryConfig) (*conversation.Memory, conversation.Store, error) {
	cfg.mustExist = true
	mem, store, err := cfg.open(ctx, e)
	if errors.Is(err, fs.ErrNotExist) {
		// Only no URL at all is the default: storeurl.Parse refuses
		// file: or sqlite: without a path.
		spec, _ := storeurl.Parse(cfg.store) // parsed by open already
		return nil, nil, noStoreFileError{path: spec.Path, defaulted: cfg.store == ""}
	}
	return mem, store, err
}

func historyList(ctx context.Context, w io.Writer, mem *conversation.Memory, full bool) error {
	sums, err := mem.List(ctx)
	if err != nil {
		return err
	}
	if len(sums) == 0 {
		fmt.Fprintln(w, "no conversations stored")
		return nil
	}
	return conversation.WriteSummaries(w, sums, full)
}

// errUnknownPhone is returned by show and clear for a phone with nothing
// stored.
func errUnknownPhone(phone string) error {
	return fmt.Errorf("no conversation stored for %s (see mombot history list --full)", phone)
}

func historyShow(ctx context.Context, w io.Writer, mem *conversation.Memory, phone string, asJSON bool) error {
	phone, err := mem.Key(ctx, phone)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	// Show, not History: looking at an expired conversation must not
	// delete it.
	err = mem.Show(ctx, w, phone, asJSON)
	if errors.Is(err, conversation.ErrNotFound) {
		return errUnknownPhone(phone)
	}
	return err
}

func historyClear(ctx context.Context, w io.Writer, mem *conversation.Memory, phone string) error {
	phone, err := mem.Key(ctx, phone)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	err = mem.Clear(ctx, phone)
	if errors.Is(err, conversation.ErrNotFound) {
		return errUnknownPhone(phone)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "cleared the conversation with %s\n", phone)
	return nil
}
