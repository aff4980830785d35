package assistant_test

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/usage"
)

// A typical family's month, for docs/families.md's cost estimate: two
// adults who write about ten messages a day each and two children who
// write about five, 30 days.
const (
	familyMessagesPerDay = 2*10 + 2*5
	familyDays           = 30
)

// familyCostScenario is the conversation the estimate's messages are
// like: issue 16's cache scenario (see scenario_test.go) at the default
// turn cap, two people whose messages interleave, 15% of the gaps pauses
// of 5 to 29 minutes, 30% of the messages a tool round, the built-in
// prompt, the default window and cache lifetimes.
var familyCostScenario = scenario{cap: conversation.DefaultMaxTurns, people: 2, pauses: 0.15, message: 40}

// costRow is one kind of token of the estimate: its mean per message, its
// price in US dollars per million tokens, and their product per month.
type costRow struct {
	kind   string
	tokens float64 // per message
	price  float64
}

func (r costRow) perMonth() float64 {
	return r.tokens * familyMessagesPerDay * familyDays * r.price / 1e6
}

// familyCostRows plays familyCostScenario and returns the rows of the
// estimate, priced at usage.DefaultPrices, the prices mombot usage and the
// family's page use when mombot.json sets none.
func familyCostRows(t *testing.T) []costRow {
	r := familyCostScenario.run(t, stepped).all
	n := float64(r.messages)
	p := usage.DefaultPrices
	return []costRow{
		{"input", float64(r.input) / n, p.Input},
		{"cache write 5m", float64(r.w5m) / n, p.CacheWrite5m},
		{"cache write 1h", float64(r.w1h) / n, p.CacheWrite1h},
		{"cache read", float64(r.read) / n, p.CacheRead},
		{"output", float64(r.output) / n, p.Output},
	}
}

// familyCostTable writes the rows as docs/families.md shows them.
func familyCostTable(rows []costRow) string {
	var b strings.Builder
	b.WriteString("| tokens | per message | price per million | per month |\n|---|---|---|---|\n")
	total := 0.0
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.0f | $%.2f | %.0f × %d × $%.2f ÷ 1,000,000 = $%.2f |\n",
			r.kind, r.tokens, r.price, r.tokens, familyMessagesPerDay*familyDays, r.price, r.perMonth())
		total += r.perMonth()
	}
	fmt.Fprintf(&b, "| **total** | | | **$%.2f** |\n", total)
	return b.String()
}

// TestFamilyMonthCost checks docs/families.md's monthly estimate against
// the scenario and the prices the code uses: each row's tokens and the
// total within 15% (the scenario's figures move a little when the
// built-in prompt or the window change), each price exactly. With
// MOMBOT_FAMILY_COST=1 it prints the table to paste:
//
//	MOMBOT_FAMILY_COST=1 go test -run TestFamilyMonthCost -v ./assistant/
func TestFamilyMonthCost(t *testing.T) {
	rows := familyCostRows(t)
	table := familyCostTable(rows)
	if os.Getenv("MOMBOT_FAMILY_COST") != "" {
		t.Logf("docs/families.md's table:\n%s", table)
	}
	doc, err := os.ReadFile("../docs/families.md")
	if err != nil {
		t.Fatal(err)
	}
	num := regexp.MustCompile(`[0-9][0-9,]*(\.[0-9]+)?`)
	numbers := func(line string) []float64 {
		var out []float64
		for _, m := range num.FindAllString(line, -1) {
			f, _ := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
			out = append(out, f)
		}
		return out
	}
	found := map[string][]float64{}
	for sc := bufio.NewScanner(strings.NewReader(string(doc))); sc.Scan(); {
		line := sc.Text()
		for _, r := range append(rows, costRow{kind: "**total**"}) {
			if strings.HasPrefix(line, "| "+r.kind+" |") {
				found[r.kind] = numbers(strings.TrimPrefix(line, "| "+r.kind+" |"))
			}
		}
	}
	near := func(got, want float64) bool {
		return math.Abs(got-want) <= 0.15*math.Max(math.Abs(want), 1)
	}
	total := 0.0
	for _, r := range rows {
		total += r.perMonth()
		got := found[r.kind]
		// | tokens | price | tokens × messages × price ÷ 1,000,000 = cost |
		if len(got) != 7 || !near(got[0], r.tokens) || got[1] != r.price || !near(got[2], r.tokens) ||
			got[3] != familyMessagesPerDay*familyDays || got[4] != r.price || got[5] != 1e6 || !near(got[6], r.perMonth()) {
			t.Errorf("docs/families.md's row %q is %v, out of date; the table is now:\n%s", r.kind, got, table)
		}
	}
	if got := found["**total**"]; len(got) != 1 || !near(got[0], total) {
		t.Errorf("docs/families.md's total is %v, want about $%.2f; the table is now:\n%s", got, total, table)
	}
}
