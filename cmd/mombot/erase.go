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

Deletes what is stored about one phone number: the conversation, the
recent messages, every day of the usage ledger (days already folded into
the family's anonymous totals stay as totals), every other record kept per
person, and WhatsApp's inbox of that number (its messages waiting for a
reply and the ids of those handled). Then it has the store overwrite what
it deleted (SQLite: secure_delete and a checkpoint; files: no old copy
left), and prints what it removed. It may run while serve does. The number
may be written in any form: +1 (415) 555-1234, 14155551234. Backups, logs
and what Anthropic and Meta keep are outside it. See docs/privacy.md.

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
	queued, handled, err := eraseInbox(ctx, e, cfg.store, keys)
	if err != nil {
		return fmt.Errorf("erase: deleted %s, but the inbox: %w", erased, err)
	}
	if err := store.Scrub(ctx); err != nil {
		return fmt.Errorf("erase: deleted %s, but scrubbing the store failed: %w", erased, err)
	}
	removed := erased.String()
	if queued+handled > 0 {
		if removed != "" {
			removed += ", "
		}
		removed += fmt.Sprintf("inbox messages %d, handled ids %d", queued, handled)
	}
	if removed == "" {
		removed = "nothing was stored"
	}
	fmt.Fprintf(e.stdout, "erased %s: %s\n", keys[0], removed)
	return nil
}

// eraseInbox erases keys from the inbox serve keeps with the store at
// storeURL, if it has one, and returns how many messages and handled ids
// it removed.
func eraseInbox(ctx context.Context, e *env, storeURL string, keys []string) (queued, handled int, err error) {
	snd, err := openSenders(ctx, storeURL, e.log)
	if err != nil {
		return 0, 0, err
	}
	defer snd.close()
	inbox, err := snd.existingInbox(ctx, e.log)
	if err != nil || inbox == nil {
		return 0, 0, err
	}
	if c, ok := inbox.(interface{ Close() error }); ok {
		defer c.Close()
	}
	for _, key := range keys {
		q, h, err := inbox.Erase(ctx, key)
		queued, handled = queued+q, handled+h
		if err != nil {
			return queued, handled, err
		}
	}
	return queued, handled, nil
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
