package web

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
	"github.com/mombot/mombot/usage"
)

// ledgerSince returns the usage ledger's entries from the UTC day of
// since on. It is the page's one way to the ledger.
func ledgerSince(ctx context.Context, mem *conversation.Memory, since time.Time) ([]conversation.DailyUsage, error) {
	days, err := mem.UsageSince(ctx, since)
	if err != nil {
		return nil, fmt.Errorf("web: usage: %w", err)
	}
	return days, nil
}

// period returns the first UTC day the usage pages count, and the days:
// UsageDays of them, today (UTC) the last.
func (s *Server) period() (first time.Time, days []time.Time) {
	today := conversation.UsageDay(s.now())
	first = today.AddDate(0, 0, 1-s.o.UsageDays)
	for d := first; !d.After(today); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	return first, days
}

// personUsage is one person's usage over the period.
type personUsage struct {
	ID, Name, Color string
	conversation.Usage
	Cost  float64
	Share float64 // of the prompt read from the cache; -1 without prompts
	Days  int     // the period's length
	order int     // the place in the chart's stacks and legend
}

// share is the share of u's prompt tokens read from the cache, or -1.
func share(u conversation.Usage) float64 {
	if u.PromptTokens() == 0 {
		return -1
	}
	return float64(u.CacheReadTokens) / float64(u.PromptTokens())
}

// usageOf returns p's usage over the period.
func (s *Server) usageOf(ctx context.Context, p *person) (*personUsage, error) {
	first, days := s.period()
	entries, err := ledgerSince(ctx, s.o.Memory, first)
	if err != nil {
		return nil, err
	}
	u := &personUsage{ID: p.ID, Name: p.Name, Days: len(days)}
	for _, e := range entries {
		if e.Phone == p.Key {
			u.Usage = u.Usage.Add(e.Usage)
		}
	}
	u.Cost, u.Share = s.cost(u.Usage), share(u.Usage)
	return u, nil
}

// cost returns the estimated cost of u: the main model's calls at
// Prices, the summarizer's at SummaryPrices.
func (s *Server) cost(u conversation.Usage) float64 {
	return usage.NewPricing(s.o.Prices, s.o.SummaryPrices).Cost(u)
}

// usageData is the usage page's own data.
type usageData struct {
	Chart      *chart
	People     []*personUsage // by the family's order, then the others'
	Total      personUsage
	DayRows    []dayRow // newest first
	Person     *person  // the person the page is narrowed to, if any
	Since      string
	Days       int
	Prices     string
	PricesFrom string
	Problem    string
}

// dayRow is one person's usage on one day, for the table under the chart.
type dayRow struct {
	Day, Name string
	conversation.Usage
	Cost  float64
	Share float64
}

// palette colours the people in the chart: the Okabe-Ito colours, told
// apart by people with the common colour blindnesses too.
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

// usagePage shows the usage and estimated cost per person and day, as a
// chart and as tables.
func (s *Server) usagePage(w http.ResponseWriter, r *http.Request, sess session) {
	first, days := s.period()
	d := &usageData{Since: first.Format("2 Jan 2006"), Days: len(days), PricesFrom: s.o.PricesFrom}
	p := s.o.Prices
	d.Prices = fmt.Sprintf("input $%g, cache write $%g (5 minutes) and $%g (1 hour), cache read $%g, output $%g per million tokens", p.Input, p.CacheWrite5m, p.CacheWrite1h, p.CacheRead, p.Output)
	if id := r.URL.Query().Get("person"); id != "" {
		if d.Person = s.byID[id]; d.Person == nil {
			s.fail(w, r, sess, http.StatusNotFound, "There is nobody by that name in the family.")
			return
		}
	}
	entries, err := ledgerSince(r.Context(), s.o.Memory, first)
	if err != nil {
		s.log.Error("web: reading the usage ledger", "err", err)
		d.Problem = "The usage could not be read just now; the log has the detail."
	}
	if d.Person != nil {
		entries = slices.DeleteFunc(entries, func(e conversation.DailyUsage) bool { return e.Phone != d.Person.Key })
	}

	// Everyone the family names, in its order, then the numbers the
	// ledger holds that it does not name (masked).
	byKey := map[string]*personUsage{}
	add := func(key, id, name string) *personUsage {
		pu := &personUsage{ID: id, Name: name, Color: palette[len(d.People)%len(palette)], Days: len(days), order: len(d.People)}
		byKey[key] = pu
		d.People = append(d.People, pu)
		return pu
	}
	for _, pp := range s.people {
		if d.Person == nil || d.Person == pp {
			add(pp.Key, pp.ID, pp.Name)
		}
	}
	for _, e := range entries {
		pu := byKey[e.Phone]
		if pu == nil {
			pu = add(e.Phone, "", phone.Mask(e.Phone))
		}
		pu.Usage = pu.Usage.Add(e.Usage)
		d.Total.Usage = d.Total.Usage.Add(e.Usage)
		d.DayRows = append(d.DayRows, dayRow{Day: e.Day.Format("Mon 2 Jan"), Name: pu.Name, Usage: e.Usage, Cost: s.cost(e.Usage), Share: share(e.Usage)})
	}
	slices.Reverse(d.DayRows)
	for _, pu := range d.People {
		pu.Cost, pu.Share = s.cost(pu.Usage), share(pu.Usage)
	}
	d.Total.Cost, d.Total.Share = s.cost(d.Total.Usage), share(d.Total.Usage)
	d.Chart = s.costChart(days, entries, byKey)
	title := "Usage"
	if d.Person != nil {
		title = "Usage of " + d.Person.Name
	}
	v := s.newView(sess, title, "usage", d)
	v.Current = d.Person
	s.render(w, http.StatusOK, "usage.html", v)
}

// chart is an SVG bar chart of the estimated cost per day, each day's bar
// stacked by person, with the share of the prompts read from the cache as
// a line over it on a scale of its own.
type chart struct {
	Width, Height            float64
	Left, Top, Right, Bottom float64 // the plot's edges
	Bars                     []bar
	YTicks, ShareTicks       []tick
	XLabels                  []tick
	ShareLines               []string // polyline points, one per run of days with prompts
	ShareDots                []dot
	Empty                    bool
	Summary                  string // the chart in words, for screen readers
}

type bar struct {
	X, Y, W, H float64
	Color      string
	Title      string
}

type tick struct {
	X, Y  float64
	Label string
}

type dot struct {
	X, Y  float64
	Title string
}

// costChart draws the chart of entries over days; byKey gives each
// phone's person and colour.
func (s *Server) costChart(days []time.Time, entries []conversation.DailyUsage, byKey map[string]*personUsage) *chart {
	c := &chart{Width: 760, Height: 280, Left: 64, Top: 16, Right: 760 - 56, Bottom: 280 - 36}
	plotW, plotH := c.Right-c.Left, c.Bottom-c.Top
	index := map[time.Time]int{}
	for i, d := range days {
		index[d] = i
	}
	type stack struct {
		cost   float64
		u      conversation.Usage
		byWhom []conversation.DailyUsage
	}
	stacks := make([]stack, len(days))
	for _, e := range entries {
		i, ok := index[conversation.UsageDay(e.Day)]
		if !ok {
			continue
		}
		stacks[i].cost += s.cost(e.Usage)
		stacks[i].u = stacks[i].u.Add(e.Usage)
		stacks[i].byWhom = append(stacks[i].byWhom, e)
	}
	top := 0.0
	for _, st := range stacks {
		top = max(top, st.cost)
	}
	if top == 0 {
		c.Empty = true
		top = 0.01
	}
	step, ymax := niceScale(top)
	for v := 0.0; v <= ymax+step/2; v += step {
		c.YTicks = append(c.YTicks, tick{X: c.Left - 8, Y: round1(c.Bottom - v/ymax*plotH), Label: dollarsAxis(v, step)})
	}
	for _, pct := range []float64{0, 0.5, 1} {
		c.ShareTicks = append(c.ShareTicks, tick{X: c.Right + 8, Y: c.Bottom - pct*plotH, Label: fmt.Sprintf("%.0f%%", 100*pct)})
	}
	slot := plotW / float64(len(days))
	every := max(1, int(math.Ceil(float64(len(days))/8)))
	var line []string
	endLine := func() {
		if len(line) > 1 {
			c.ShareLines = append(c.ShareLines, strings.Join(line, " "))
		}
		line = nil
	}
	for i, d := range days {
		x := c.Left + float64(i)*slot
		if (len(days)-1-i)%every == 0 {
			c.XLabels = append(c.XLabels, tick{X: round1(x + slot/2), Y: c.Bottom + 18, Label: d.Format("2 Jan")})
		}
		st := stacks[i]
		// The family's order, bottom up.
		slices.SortStableFunc(st.byWhom, func(a, b conversation.DailyUsage) int {
			return cmp.Compare(byKey[a.Phone].order, byKey[b.Phone].order)
		})
		y := c.Bottom
		for _, e := range st.byWhom {
			cost := s.cost(e.Usage)
			h := cost / ymax * plotH
			pu := byKey[e.Phone]
			c.Bars = append(c.Bars, bar{X: round1(x + slot*0.15), Y: round1(y - h), W: round1(slot * 0.7), H: round1(h), Color: pu.Color,
				Title: fmt.Sprintf("%s, %s: %s, %s, %s of the prompt from the cache", pu.Name, d.Format("Mon 2 Jan"), dollars(cost), plural(int(e.Messages), "message"), pct(share(e.Usage)))})
			y -= h
		}
		if sh := share(st.u); sh >= 0 {
			px, py := round1(x+slot/2), round1(c.Bottom-sh*plotH)
			line = append(line, fmt.Sprintf("%.1f,%.1f", px, py))
			c.ShareDots = append(c.ShareDots, dot{X: px, Y: py, Title: fmt.Sprintf("%s: %s of the prompt read from the cache", d.Format("Mon 2 Jan"), pct(sh))})
		} else {
			endLine()
		}
	}
	endLine()
	total := 0.0
	for _, st := range stacks {
		total += st.cost
	}
	c.Summary = fmt.Sprintf("Estimated cost per day from %s to %s, %s in all; the highest day %s.", days[0].Format("2 Jan"), days[len(days)-1].Format("2 Jan"), dollars(total), dollars(max(top, 0)))
	if c.Empty {
		c.Summary = "No usage in these days."
	}
	return c
}

// round1 rounds a coordinate to a tenth of a pixel, which is all the
// chart needs.
func round1(v float64) float64 { return math.Round(v*10) / 10 }

// niceScale returns a tick step of 1, 2 or 5 times a power of ten, and the
// top of the scale, a multiple of it at or above top, in about four steps.
func niceScale(top float64) (step, ymax float64) {
	raw := top / 4
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * pow; step >= raw {
			break
		}
	}
	return step, math.Ceil(top/step-1e-9) * step
}

// dollarsAxis writes an axis label: whole dollars for steps of a dollar
// or more, cents at least below, and as many decimals as the step needs.
func dollarsAxis(v, step float64) string {
	if v == 0 {
		return "$0"
	}
	decimals := 0
	if step < 1 {
		decimals = max(2, int(math.Ceil(-math.Log10(step)-1e-9)))
	}
	return fmt.Sprintf("$%.*f", decimals, v)
}

// dollars writes an estimated cost with the decimals that matter.
func dollars(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v < 0.01:
		return fmt.Sprintf("$%.4f", v)
	case v < 10:
		return fmt.Sprintf("$%.3f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// pct writes a share as a percentage, or a dash for none (-1).
func pct(v float64) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}
