package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
)

// prices are what the API charges, in US dollars per million tokens, by
// kind of token.
type prices struct {
	Input        float64 `json:"input"`
	CacheWrite5m float64 `json:"cache_write_5m"`
	CacheWrite1h float64 `json:"cache_write_1h"`
	CacheRead    float64 `json:"cache_read"`
	Output       float64 `json:"output"`
}

// Prompt-cache prices relative to the input price, for every model: a
// 5-minute write costs 1.25x, a 1-hour write 2x, a read 0.1x
// (https://platform.claude.com/docs/en/about-claude/pricing, "Prompt
// caching"). They apply when mombot.json sets an input price and not the
// cache's.
const (
	cacheWrite5mFactor = 1.25
	cacheWrite1hFactor = 2
	cacheReadFactor    = 0.1
)

// defaultPrices are the list prices of assistant.DefaultModel, Claude
// Sonnet 5.5: $2 input, $2.50 5-minute cache write, $4 1-hour cache write,
// $0.20 cache read and $10 output per million tokens
// (https://platform.claude.com/docs/en/models/sonnet-5-5/overview,
// "Pricing"; the same as the model pricing table of
// https://platform.claude.com/docs/en/about-claude/pricing).
var defaultPrices = prices{Input: 2, CacheWrite5m: 2.5, CacheWrite1h: 4, CacheRead: 0.2, Output: 10}

// defaultPricesModel is the model defaultPrices are for:
// assistant.DefaultModel, as a test checks.
const defaultPricesModel = "claude-sonnet-5-5"

// priceConfig is "prices" in mombot.json; each is US dollars per million
// tokens, and an absent one takes its default. Without the cache prices, an
// input price sets them too, by the API's factors.
type priceConfig struct {
	Input        *float64 `json:"input"`
	CacheWrite5m *float64 `json:"cache_write_5m"`
	CacheWrite1h *float64 `json:"cache_write_1h"`
	CacheRead    *float64 `json:"cache_read"`
	Output       *float64 `json:"output"`
}

// set reports whether any price is configured.
func (c *priceConfig) set() bool {
	return c != nil && (c.Input != nil || c.CacheWrite5m != nil || c.CacheWrite1h != nil || c.CacheRead != nil || c.Output != nil)
}

// resolve returns the prices in force: the defaults, with what c sets.
func (c *priceConfig) resolve() (prices, error) {
	p := defaultPrices
	if c == nil {
		return p, nil
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"input", c.Input}, {"cache_write_5m", c.CacheWrite5m}, {"cache_write_1h", c.CacheWrite1h}, {"cache_read", c.CacheRead}, {"output", c.Output}} {
		if f.v != nil && (*f.v < 0 || math.IsInf(*f.v, 0) || math.IsNaN(*f.v)) {
			return prices{}, fmt.Errorf("prices.%s must be a price in US dollars per million tokens, at least 0, got %v", f.name, *f.v)
		}
	}
	if c.Input != nil {
		in := *c.Input
		p = prices{Input: in, CacheWrite5m: in * cacheWrite5mFactor, CacheWrite1h: in * cacheWrite1hFactor, CacheRead: in * cacheReadFactor, Output: p.Output}
	}
	for _, f := range []struct {
		dst *float64
		v   *float64
	}{{&p.CacheWrite5m, c.CacheWrite5m}, {&p.CacheWrite1h, c.CacheWrite1h}, {&p.CacheRead, c.CacheRead}, {&p.Output, c.Output}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	return p, nil
}

// cost returns the estimated cost of u at p, in US dollars.
func (p prices) cost(u conversation.Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.CacheWrite5mTokens)*p.CacheWrite5m +
		float64(u.CacheWrite1hTokens)*p.CacheWrite1h + float64(u.CacheReadTokens)*p.CacheRead +
		float64(u.OutputTokens)*p.Output) / 1e6
}

// readShare is the share of the prompt tokens read from the cache, or -1
// when there were none.
func readShare(u conversation.Usage) float64 {
	if u.PromptTokens() == 0 {
		return -1
	}
	return float64(u.CacheReadTokens) / float64(u.PromptTokens())
}

const usageUsage = `Usage: mombot usage [--since DATE] [--json] [--full] [flags]

What the assistant's API calls cost, per person and in total: messages, API
calls, input, cache-write (5-minute, 1-hour), cache-read and output tokens,
the share of the prompts read from the cache, and an estimated cost from the
prices in mombot.json ("prices", US dollars per million tokens; default: the
list prices of ` + defaultPricesModel + `). The usage ledger outlives the
conversations: history clear and expiry do not erase it. Days are UTC days.

Flags (anywhere on the line):`

func runUsage(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("mombot usage", flag.ContinueOnError)
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
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usageUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, e, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("usage takes no arguments, got %q (see mombot usage -h)", strings.Join(pos, " "))
	}
	fc, err := loadConfig(*configPath)
	if err != nil {
		return err
	}
	p, err := fc.Prices.resolve()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	r := usageReport{Since: since, Prices: p, PricesFrom: "the prices in mombot.json"}
	if !fc.Prices.set() {
		r.PricesFrom = "the list prices of " + defaultPricesModel
		if fc.Model != "" && fc.Model != defaultPricesModel {
			fmt.Fprintf(e.stderr, "mombot: usage: the model is %s but the prices are %s's; set \"prices\" in the configuration file for a better estimate\n", fc.Model, defaultPricesModel)
		}
	}

	// usage only looks: no file, no lock, a damaged store reported, not moved.
	cfg.readOnly = true
	mem, store, err := openForHistory(ctx, e, &cfg)
	var nf noStoreFileError
	if errors.As(err, &nf) && nf.defaulted {
		// A fresh clone: nothing has been recorded, which is not a mistake.
		if *asJSON {
			return r.writeJSON(e.stdout, nil, *full)
		}
		fmt.Fprintf(e.stdout, "no usage recorded yet (%s does not exist)\n", nf.path)
		return nil
	}
	if err != nil {
		return err
	}
	defer store.Close()
	ledger, ok := mem.Store().(conversation.UsageLedger)
	if !ok {
		return fmt.Errorf("usage: the store %T keeps no usage ledger", mem.Store())
	}
	days, err := ledger.UsageSince(ctx, since)
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	names := map[string]string{}
	for phone, person := range fc.Family {
		names[phone] = person.Name
	}
	r.add(days, names)
	if *asJSON {
		return r.writeJSON(e.stdout, days, *full)
	}
	return r.writeTable(e.stdout, *full)
}

// usageReport is what mombot usage prints.
type usageReport struct {
	Since      time.Time
	Prices     prices
	PricesFrom string
	People     []personUsage
	Total      conversation.Usage
}

// personUsage is one person's usage over the report's days.
type personUsage struct {
	Phone, Name string
	conversation.Usage
}

func (r *usageReport) add(days []conversation.DailyUsage, names map[string]string) {
	byPhone := map[string]*personUsage{}
	for _, d := range days {
		p := byPhone[d.Phone]
		if p == nil {
			p = &personUsage{Phone: d.Phone, Name: names[d.Phone]}
			byPhone[d.Phone] = p
		}
		p.Usage = p.Usage.Add(d.Usage)
		r.Total = r.Total.Add(d.Usage)
	}
	for _, p := range byPhone {
		r.People = append(r.People, *p)
	}
	slices.SortFunc(r.People, func(a, b personUsage) int { return strings.Compare(a.Phone, b.Phone) })
}

func showPhone(number string, full bool) string {
	if full {
		return number
	}
	return phone.Mask(number)
}

func (r *usageReport) writeTable(w io.Writer, full bool) error {
	period := "everything recorded"
	if !r.Since.IsZero() {
		period = "since " + r.Since.Format(time.DateOnly)
	}
	if len(r.People) == 0 {
		fmt.Fprintf(w, "no usage recorded (%s)\n", period)
		return nil
	}
	fmt.Fprintf(w, "Usage, %s (days are UTC days).\n", period)
	fmt.Fprintf(w, "Estimated cost at %s, US dollars per million tokens: input %s, cache write 5m %s, cache write 1h %s, cache read %s, output %s.\n\n",
		r.PricesFrom, price(r.Prices.Input), price(r.Prices.CacheWrite5m), price(r.Prices.CacheWrite1h), price(r.Prices.CacheRead), price(r.Prices.Output))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PHONE\tNAME\tMESSAGES\tAPI CALLS\tINPUT\tCACHE WRITE 5M\tCACHE WRITE 1H\tCACHE READ\tOUTPUT\tREAD SHARE\tEST. COST\t")
	row := func(phone, name string, u conversation.Usage) {
		share := "-"
		if s := readShare(u); s >= 0 {
			share = fmt.Sprintf("%.1f%%", 100*s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t$%.4f\t\n", phone, name, u.Messages, u.Calls,
			u.InputTokens, u.CacheWrite5mTokens, u.CacheWrite1hTokens, u.CacheReadTokens, u.OutputTokens, share, r.Prices.cost(u))
	}
	for _, p := range r.People {
		row(showPhone(p.Phone, full), p.Name, p.Usage)
	}
	row("TOTAL", "", r.Total)
	return tw.Flush()
}

// price writes a price to a millionth of a dollar, without trailing zeros:
// 2, 2.5, 0.3 (not 0.30000000000000004, which 3 x 0.1 is in floating point).
func price(v float64) string { return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64) }

// usageJSON is one person's or the total's usage in the JSON output.
type usageJSON struct {
	Phone              string      `json:"phone,omitempty"`
	Name               string      `json:"name,omitempty"`
	Day                string      `json:"day,omitempty"`
	Messages           int64       `json:"messages"`
	Calls              int64       `json:"api_calls"`
	InputTokens        int64       `json:"input_tokens"`
	CacheWrite5mTokens int64       `json:"cache_write_5m_tokens"`
	CacheWrite1hTokens int64       `json:"cache_write_1h_tokens"`
	CacheReadTokens    int64       `json:"cache_read_tokens"`
	OutputTokens       int64       `json:"output_tokens"`
	CacheReadShare     *float64    `json:"cache_read_share"` // null without prompt tokens
	EstimatedCostUSD   float64     `json:"estimated_cost_usd"`
	Days               []usageJSON `json:"days,omitempty"`
}

func (r *usageReport) entryJSON(u conversation.Usage) usageJSON {
	j := usageJSON{
		Messages: u.Messages, Calls: u.Calls, InputTokens: u.InputTokens, CacheWrite5mTokens: u.CacheWrite5mTokens,
		CacheWrite1hTokens: u.CacheWrite1hTokens, CacheReadTokens: u.CacheReadTokens, OutputTokens: u.OutputTokens,
		EstimatedCostUSD: r.Prices.cost(u),
	}
	if s := readShare(u); s >= 0 {
		j.CacheReadShare = &s
	}
	return j
}

func (r *usageReport) writeJSON(w io.Writer, days []conversation.DailyUsage, full bool) error {
	out := struct {
		Since      *string     `json:"since"`
		DayZone    string      `json:"day_zone"`
		Prices     prices      `json:"prices_per_million_tokens"`
		PricesFrom string      `json:"prices_from"`
		People     []usageJSON `json:"people"`
		Total      usageJSON   `json:"total"`
	}{DayZone: "UTC", Prices: r.Prices, PricesFrom: r.PricesFrom, People: []usageJSON{}, Total: r.entryJSON(r.Total)}
	if !r.Since.IsZero() {
		s := r.Since.Format(time.DateOnly)
		out.Since = &s
	}
	for _, p := range r.People {
		j := r.entryJSON(p.Usage)
		j.Phone, j.Name = showPhone(p.Phone, full), p.Name
		for _, d := range days { // ordered by day
			if d.Phone == p.Phone {
				dj := r.entryJSON(d.Usage)
				dj.Day = d.Day.Format(time.DateOnly)
				j.Days = append(j.Days, dj)
			}
		}
		out.People = append(out.People, j)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
