package usage

import (
	"encoding/json"
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

// Report is what the usage command prints: the ledger's days from Since
// on, per person and in total, priced at Prices.
type Report struct {
	// Since is the first UTC day counted; zero means everything recorded.
	Since time.Time
	// Prices estimate the cost of the main model's calls, and PricesFrom
	// says where they come from ("the prices in mombot.json").
	Prices     Prices
	PricesFrom string
	// SummaryPrices estimate the cost of the summarizer's calls, and
	// SummaryFrom says where they come from ("the list prices of
	// claude-haiku-5-5"); nil means at Prices.
	SummaryPrices *Prices
	SummaryFrom   string
	// People are each person's sums, ordered by phone, and Total all of
	// theirs.
	People []Person
	Total  conversation.Usage
	// FullPhones shows whole phone numbers instead of masking them.
	FullPhones bool

	days []conversation.DailyUsage
}

// Person is one person's usage over the report's days.
type Person struct {
	Phone, Name string
	conversation.Usage
}

// Add counts the ledger's days, ordered by day as
// [conversation.Memory.UsageSince] returns them; names maps a phone
// to the person's name, and a phone without one shows no name.
func (r *Report) Add(days []conversation.DailyUsage, names map[string]string) {
	byPhone := map[string]*Person{}
	for _, p := range r.People {
		byPhone[p.Phone] = &p
	}
	for _, d := range days {
		p := byPhone[d.Phone]
		if p == nil {
			p = &Person{Phone: d.Phone, Name: names[d.Phone]}
			byPhone[d.Phone] = p
		}
		p.Usage = p.Usage.Add(d.Usage)
		r.Total = r.Total.Add(d.Usage)
	}
	r.days = append(r.days, days...)
	r.People = r.People[:0]
	for _, p := range byPhone {
		r.People = append(r.People, *p)
	}
	slices.SortFunc(r.People, func(a, b Person) int { return strings.Compare(a.Phone, b.Phone) })
}

// pricing returns what the report prices each model's calls at.
func (r *Report) pricing() Pricing {
	return NewPricing(r.Prices, r.SummaryPrices)
}

func (r *Report) phone(number string) string {
	if r.FullPhones {
		return number
	}
	return phone.Mask(number)
}

// WriteTable writes the report as a table for people: a row per person
// and the total, with the prices it was estimated at.
func (r *Report) WriteTable(w io.Writer) error {
	period := "everything recorded"
	if !r.Since.IsZero() {
		period = "since " + r.Since.Format(time.DateOnly)
	}
	if len(r.People) == 0 {
		_, err := fmt.Fprintf(w, "no usage recorded (%s)\n", period)
		return err
	}
	fmt.Fprintf(w, "Usage, %s (days are UTC days).\n", period)
	fmt.Fprintf(w, "Estimated cost at %s, US dollars per million tokens: input %s, cache write 5m %s, cache write 1h %s, cache read %s, output %s.\n",
		r.PricesFrom, price(r.Prices.Input), price(r.Prices.CacheWrite5m), price(r.Prices.CacheWrite1h), price(r.Prices.CacheRead), price(r.Prices.Output))
	if p := r.SummaryPrices; p != nil {
		fmt.Fprintf(w, "The running summaries' calls at %s: input %s, cache write 5m %s, cache write 1h %s, cache read %s, output %s.\n",
			r.SummaryFrom, price(p.Input), price(p.CacheWrite5m), price(p.CacheWrite1h), price(p.CacheRead), price(p.Output))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PHONE\tNAME\tMESSAGES\tAPI CALLS\tINPUT\tCACHE WRITE 5M\tCACHE WRITE 1H\tCACHE READ\tOUTPUT\tREAD SHARE\tEST. COST\t")
	row := func(phone, name string, u conversation.Usage) {
		share := "-"
		if s := readShare(u); s >= 0 {
			share = fmt.Sprintf("%.1f%%", 100*s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t$%.4f\t\n", phone, name, u.Messages, u.Calls,
			u.InputTokens, u.CacheWrite5mTokens, u.CacheWrite1hTokens, u.CacheReadTokens, u.OutputTokens, share, r.pricing().Cost(u))
	}
	for _, p := range r.People {
		row(r.phone(p.Phone), p.Name, p.Usage)
	}
	row("TOTAL", "", r.Total)
	return tw.Flush()
}

// price writes a price to a millionth of a dollar, without trailing zeros:
// 2, 2.5, 0.3 (not 0.30000000000000004, which 3 x 0.1 is in floating point).
func price(v float64) string { return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64) }

// entryJSON is one person's, one day's or the total's usage in the JSON
// output.
type entryJSON struct {
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
	Days               []entryJSON `json:"days,omitempty"`
}

func (r *Report) entryJSON(u conversation.Usage) entryJSON {
	j := entryJSON{
		Messages: u.Messages, Calls: u.Calls, InputTokens: u.InputTokens, CacheWrite5mTokens: u.CacheWrite5mTokens,
		CacheWrite1hTokens: u.CacheWrite1hTokens, CacheReadTokens: u.CacheReadTokens, OutputTokens: u.OutputTokens,
		EstimatedCostUSD: r.pricing().Cost(u),
	}
	if s := readShare(u); s >= 0 {
		j.CacheReadShare = &s
	}
	return j
}

// WriteJSON writes the report as one indented JSON object for programs:
// the period, the prices, each person with their days, and the total.
func (r *Report) WriteJSON(w io.Writer) error {
	out := struct {
		Since      *string `json:"since"`
		DayZone    string  `json:"day_zone"`
		Prices     Prices  `json:"prices_per_million_tokens"`
		PricesFrom string  `json:"prices_from"`
		// The summarizer's prices, when they are not Prices.
		SummaryPrices *Prices     `json:"summary_prices_per_million_tokens,omitempty"`
		SummaryFrom   string      `json:"summary_prices_from,omitempty"`
		People        []entryJSON `json:"people"`
		Total         entryJSON   `json:"total"`
	}{DayZone: "UTC", Prices: r.Prices, PricesFrom: r.PricesFrom, SummaryPrices: r.SummaryPrices, SummaryFrom: r.SummaryFrom,
		People: []entryJSON{}, Total: r.entryJSON(r.Total)}
	if !r.Since.IsZero() {
		s := r.Since.Format(time.DateOnly)
		out.Since = &s
	}
	for _, p := range r.People {
		j := r.entryJSON(p.Usage)
		j.Phone, j.Name = r.phone(p.Phone), p.Name
		for _, d := range r.days { // ordered by day
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
