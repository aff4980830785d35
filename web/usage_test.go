package web_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/usage"
	"github.com/mombot/mombot/web"
)

// TestUsage checks the usage page: each person's bar on each day of the
// period with its estimated cost, the cache share's dots, the totals, a
// number the family does not name shown masked, and the page narrowed to
// one person.
func TestUsage(t *testing.T) {
	now := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)
	f := newFixture(t, func(o *web.Options) { o.Now = func() time.Time { return now } })
	ctx := t.Context()
	add := func(number string, daysAgo int, u conversation.Usage) {
		t.Helper()
		if err := f.mem.AddUsage(ctx, number, now.AddDate(0, 0, -daysAgo), u); err != nil {
			t.Fatal(err)
		}
	}
	// At the default prices ($2 input, $0.20 cache read, $10 output per
	// million): Erin $2.00 today, $1.20 two days ago; Jason $0.50 today;
	// a stranger $0.10; and a day too old to count.
	add(erinPhone, 0, conversation.Usage{Messages: 3, Tokens: conversation.Tokens{Calls: 4, InputTokens: 500_000, OutputTokens: 100_000}})
	add(erinPhone, 2, conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, InputTokens: 100_000, CacheReadTokens: 3_000_000, OutputTokens: 40_000}})
	add(jasonPhone, 0, conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, InputTokens: 250_000}})
	add("+447700900123", 1, conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, InputTokens: 50_000}})
	add(erinPhone, 40, conversation.Usage{Messages: 9, Tokens: conversation.Tokens{Calls: 9, InputTokens: 9_000_000}})

	b := f.browser()
	page := b.get("/usage").body
	if n := strings.Count(page, `class="bar"`); n != 4 {
		t.Errorf("the chart has %d bars, want 4 (one per person and day in the period):\n%s", n, page)
	}
	if n := strings.Count(page, `class="share-dot"`); n != 3 {
		t.Errorf("the chart has %d cache share dots, want 3 (one per day with prompts)", n)
	}
	for _, want := range []string{
		"<svg class=\"cost-chart\"",
		"Erin, Tue 10 Mar: $2.000, 3 messages,",           // a bar's title
		"Mon 9 Mar: 0% of the prompt read from the cache", // a dot's title
		"Sun 8 Mar: 97% of the prompt read from the cache",
		"Erin: $3.200", "Jason: $0.500", // the legend
		"&#43;********0123", // the stranger, masked
		"$3.800",            // the total
		"9 Feb 2026",        // the period's first day
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the usage page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "447700900123") {
		t.Errorf("the usage page shows a number in full")
	}

	erin := b.get("/usage?person=erin").body
	if n := strings.Count(erin, `class="bar"`); n != 2 || strings.Contains(erin, "Jason: ") {
		t.Errorf("Erin's usage page has %d bars, want her 2 only:\n%s", n, erin)
	}
	if !strings.Contains(erin, "Usage of Erin") {
		t.Errorf("Erin's usage page is not titled so")
	}
	// Her chat page says it in a line.
	if p := b.get("/people/erin").body; !regexp.MustCompile(`Last 30 days: 4 messages, \$3\.200 estimated`).MatchString(p) {
		t.Errorf("Erin's page lacks her usage line:\n%s", p)
	}
}

// TestUsageEmpty checks the usage page before anything was used.
func TestUsageEmpty(t *testing.T) {
	page := newFixture(t, nil).browser().get("/usage").body
	if !strings.Contains(page, "No usage in these days.") || strings.Contains(page, `class="bar"`) {
		t.Errorf("the usage page without usage:\n%s", page)
	}
}

// TestUsageSummarizerPrices: the running summaries' part of a day is
// priced at SummaryPrices, the rest at Prices.
func TestUsageSummarizerPrices(t *testing.T) {
	now := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)
	f := newFixture(t, func(o *web.Options) {
		o.Now = func() time.Time { return now }
		o.SummaryPrices = &usage.HaikuPrices
	})
	// Erin: 500,000 input tokens of the main model ($2 a million: $1)
	// and 1,000,000 of the summarizer's ($1 a million at Haiku's prices:
	// $1; $2 at the main model's).
	u := conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 2, InputTokens: 1_500_000}, Summarizer: conversation.Tokens{Calls: 1, InputTokens: 1_000_000}}
	if err := f.mem.AddUsage(t.Context(), erinPhone, now, u); err != nil {
		t.Fatal(err)
	}
	if page := f.browser().get("/usage").body; !strings.Contains(page, "Erin: $2.000") {
		t.Errorf("the usage page does not price Erin's day at $2.000:\n%s", page)
	}
}
