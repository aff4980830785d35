package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/config"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/usage"
)

const usageUsage = `Usage: mombot usage [--since DATE] [--json] [--full] [flags]

What the assistant's API calls cost, per person and in total: messages, API
calls, input, cache-write (5-minute, 1-hour), cache-read and output tokens,
the share of the prompts read from the cache, and an estimated cost from the
prices in mombot.json ("prices", US dollars per million tokens; default: the
list prices of ` + usage.DefaultPricesModel + `). The running summaries' calls are
priced apart, at the list prices of memory.summary_model (default
` + assistant.DefaultSummaryModel + `). The usage ledger outlives the conversations:
history clear and expiry do not erase it; days older than retention.usage
(default 395d) are the family's totals, the row *. Days are UTC days.

Flags (anywhere on the line):`

func runUsage(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("mombot usage", usageUsage)
	var cfg memoryConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	configPath := fs.String("config", e.getenv("MOMBOT_CONFIG"), "configuration file: the family's names, the model and prices (env MOMBOT_CONFIG; default mombot.json if it exists)")
	var since time.Time
	fs.Func("since", "count from this UTC day on, like 2026-02-24 (default: everything recorded)", func(v string) error {
		d, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return fmt.Errorf("want a date like 2026-02-24")
		}
		since = d
		return nil
	})
	asJSON := fs.Bool("json", false, "print one JSON object for programs instead of a table")
	full := fs.Bool("full", false, "show whole phone numbers instead of masking them")
	pos, err := cli.ParseInterleaved(fs, e.stderr, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return cli.Usagef("usage takes no arguments, got %q (see mombot usage -h)", strings.Join(pos, " "))
	}
	fc, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	p, err := fc.Prices.Resolve()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	r := usage.Report{Since: since, Prices: p, PricesFrom: fc.Prices.From(), FullPhones: *full}
	if w := fc.Prices.ModelWarning(fc.Model); w != "" {
		fmt.Fprintln(e.stderr, "mombot: usage: "+w)
	}
	summaryModel := cmp.Or(fc.Memory.SummaryModel, assistant.DefaultSummaryModel)
	r.SummaryPrices = summaryPrices(fc)
	if r.SummaryPrices != nil {
		r.SummaryFrom = "the list prices of " + summaryModel
	}

	// usage only looks: no file, no lock, a damaged store reported, not moved.
	cfg.readOnly = true
	mem, store, err := openForHistory(ctx, e, &cfg)
	var nf noStoreFileError
	if errors.As(err, &nf) && nf.defaulted {
		// A fresh clone: nothing has been recorded, which is not a mistake.
		if *asJSON {
			return r.WriteJSON(e.stdout)
		}
		fmt.Fprintf(e.stdout, "no usage recorded yet (%s does not exist)\n", nf.path)
		return nil
	}
	if err != nil {
		return err
	}
	defer store.Close()
	days, err := mem.UsageSince(ctx, since)
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	r.Add(days, fc.Names())
	if r.SummaryPrices == nil && r.Total.Summarizer != (conversation.Tokens{}) {
		fmt.Fprintf(e.stderr, "mombot: usage: the prices of memory.summary_model %s are unknown; its calls are priced as the main model's\n", summaryModel)
	}
	if *asJSON {
		return r.WriteJSON(e.stdout)
	}
	return r.WriteTable(e.stdout)
}

// summaryPrices returns the list prices of memory.summary_model, which the
// summarizer's calls bill at, or nil when mombot does not know them.
func summaryPrices(fc *config.File) *usage.Prices {
	p, ok := usage.ListPrices(cmp.Or(fc.Memory.SummaryModel, assistant.DefaultSummaryModel))
	if !ok {
		return nil
	}
	return &p
}
