package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/cli"
	phonepkg "github.com/mombot/mombot/phone"
)

const eraseUsage = `Usage: mombot erase [flags] PHONE

Deletes everything stored about one phone number: the conversation, the
recent messages, every day of the usage ledger (days already folded into
the family's anonymous totals stay as totals), and every other record kept
per person. Then it has the store overwrite what it deleted (SQLite:
secure_delete and a checkpoint; files: no old copy left), and prints what it
removed. The number may be written in any form: +1 (415) 555-1234,
14155551234. See docs/privacy.md.

Flags (anywhere on the line):`

func runErase(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("mombot erase", eraseUsage)
	var cfg memoryConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	pos, err := cli.ParseInterleaved(fs, e.stderr, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("erase: give exactly one phone number, like +14155551234, got %q", strings.Join(pos, " "))
	}
	keys, err := eraseKeys(pos[0])
	if err != nil {
		return cli.Usagef("erase: %v", err)
	}
	mem, store, err := openForHistory(ctx, e, &cfg)
	if err != nil {
		return err
	}
	defer store.Close()

	erased := conversation.Erased{}
	for _, key := range keys {
		got, err := mem.Erase(ctx, key)
		for k, n := range got {
			erased[k] += n
		}
		if err != nil {
			return fmt.Errorf("erase: %w", err)
		}
	}
	if err := store.Scrub(ctx); err != nil {
		return fmt.Errorf("erase: deleted %s, but scrubbing the store failed: %w", erased, err)
	}
	removed := erased.String()
	if removed == "" {
		removed = "nothing was stored"
	}
	fmt.Fprintf(e.stdout, "erased %s: %s\n", keys[0], removed)
	return nil
}

// eraseKeys returns the keys a number's records may be under: its E.164
// form, as the assistant stores it, and the number as written when that
// differs (a key another program wrote).
func eraseKeys(number string) ([]string, error) {
	number = strings.TrimSpace(number)
	if err := conversation.CheckPhone(number); err != nil {
		return nil, err
	}
	if number == conversation.Anonymous || number == conversation.SystemSender {
		return nil, fmt.Errorf("%q is not a person's number", number)
	}
	norm, err := phonepkg.Normalize(number)
	if err != nil || norm == number {
		return []string{number}, nil
	}
	return []string{norm, number}, nil
}
