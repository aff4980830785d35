package usage

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// A report sums each person's days, orders people by phone, masks their
// numbers unless asked not to, and prices every row.
func TestReport(t *testing.T) {
	day1 := time.Date(2026, 2, 23, 0, 0, 0, 0, time.UTC)
	day2 := day1.AddDate(0, 0, 1)
	days := []conversation.DailyUsage{
		{Phone: "+14155555678", Day: day1, Usage: conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, InputTokens: 10, OutputTokens: 20}}},
		{Phone: "+14155551234", Day: day1, Usage: conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 2, InputTokens: 1000, CacheReadTokens: 1000, OutputTokens: 500}}},
		{Phone: "+14155551234", Day: day2, Usage: conversation.Usage{Messages: 2, Tokens: conversation.Tokens{Calls: 2, CacheWrite5mTokens: 2000}}},
	}
	r := Report{Since: day1, Prices: DefaultPrices, PricesFrom: "the defaults"}
	r.Add(days, map[string]string{"+14155551234": "Erin"})
	if len(r.People) != 2 || r.People[0].Phone != "+14155551234" || r.People[0].Name != "Erin" || r.People[1].Name != "" {
		t.Fatalf("people %+v", r.People)
	}
	if got, want := r.People[0].Usage, (conversation.Usage{Messages: 3, Tokens: conversation.Tokens{Calls: 4, InputTokens: 1000, CacheWrite5mTokens: 2000, CacheReadTokens: 1000, OutputTokens: 500}}); got != want {
		t.Errorf("Erin's sum %+v, want %+v", got, want)
	}
	if r.Total.Messages != 4 || r.Total.OutputTokens != 520 {
		t.Errorf("total %+v", r.Total)
	}

	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"since 2026-02-23", "+*******1234", "Erin", "TOTAL", "25.0%", "cache write 5m 2.5,"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if strings.Contains(table.String(), "4155551234") {
		t.Errorf("a whole number in the table:\n%s", table.String())
	}

	r.FullPhones = true
	var out strings.Builder
	if err := r.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Since  string
		People []struct {
			Phone string
			Cost  float64  `json:"estimated_cost_usd"`
			Share *float64 `json:"cache_read_share"`
			Days  []struct{ Day string }
		}
	}
	if err := json.Unmarshal([]byte(out.String()), &j); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if j.Since != "2026-02-23" || len(j.People) != 2 || j.People[0].Phone != "+14155551234" || len(j.People[0].Days) != 2 || j.People[0].Days[1].Day != "2026-02-24" {
		t.Fatalf("JSON %+v", j)
	}
	// $2 input, $2.50 5-minute write, $0.20 read, $10 output per million.
	if want := (1000*2 + 2000*2.5 + 1000*0.2 + 500*10) / 1e6; math.Abs(j.People[0].Cost-want) > 1e-12 {
		t.Errorf("Erin's cost %v, want %v", j.People[0].Cost, want)
	}
	if j.People[1].Share == nil || *j.People[1].Share != 0 {
		t.Errorf("a share of 0 is not null: %v", j.People[1].Share)
	}

	var empty strings.Builder
	if err := (&Report{}).WriteTable(&empty); err != nil || empty.String() != "no usage recorded (everything recorded)\n" {
		t.Errorf("empty report %q, %v", empty.String(), err)
	}
}

// TestReportPricesEachModel: the summarizer's part of a ledger entry is
// priced at the summary model's prices, the rest at the main model's; the
// token counts shown are every call's.
func TestReportPricesEachModel(t *testing.T) {
	day := time.Date(2026, 2, 24, 0, 0, 0, 0, time.UTC)
	sum := conversation.Tokens{Calls: 1, InputTokens: 500, CacheWrite5mTokens: 100, OutputTokens: 100}
	main := conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 2, InputTokens: 1000, CacheReadTokens: 4000, OutputTokens: 200}}
	entry := main.Add(conversation.Usage{Tokens: sum, Summarizer: sum})
	haiku, ok := ListPrices("claude-haiku-5-5")
	if !ok || haiku != HaikuPrices {
		t.Fatalf("ListPrices(claude-haiku-5-5) = %v, %v; want Haiku's", haiku, ok)
	}
	r := Report{Prices: DefaultPrices, PricesFrom: "the defaults", SummaryPrices: &haiku, SummaryFrom: "the list prices of claude-haiku-5-5", FullPhones: true}
	r.Add([]conversation.DailyUsage{{Phone: "+14155551234", Day: day, Usage: entry}}, nil)
	// Sonnet: $2 input, $0.20 read, $10 output; Haiku: $1 input, $1.25
	// 5-minute write, $5 output; per million tokens.
	want := (1000*2+4000*0.2+200*10)/1e6 + (500*1+100*1.25+100*5)/1e6
	var out strings.Builder
	if err := r.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var j struct {
		People []struct {
			Input int64   `json:"input_tokens"`
			Cost  float64 `json:"estimated_cost_usd"`
		}
		Total struct {
			Cost float64 `json:"estimated_cost_usd"`
		}
		SummaryPrices *Prices `json:"summary_prices_per_million_tokens"`
	}
	if err := json.Unmarshal([]byte(out.String()), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.People) != 1 || math.Abs(j.People[0].Cost-want) > 1e-12 || math.Abs(j.Total.Cost-want) > 1e-12 {
		t.Errorf("cost %+v, want %v each", j, want)
	}
	if j.People[0].Input != 1500 || j.SummaryPrices == nil || *j.SummaryPrices != HaikuPrices {
		t.Errorf("input tokens %d (want every call's, 1500), summary prices %v", j.People[0].Input, j.SummaryPrices)
	}
	if atMain := DefaultPrices.Cost(entry); math.Abs(atMain-want) < 1e-9 {
		t.Errorf("the test cannot tell the two prices apart: %v", atMain)
	}
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if s := table.String(); !strings.Contains(s, "summaries' calls at the list prices of claude-haiku-5-5: input 1,") || !strings.Contains(s, fmt.Sprintf("$%.4f", want)) {
		t.Errorf("table:\n%s", s)
	}
	// Without summary prices, everything is at the main model's.
	r.SummaryPrices = nil
	out.Reset()
	if err := r.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var k struct {
		Total struct {
			Cost float64 `json:"estimated_cost_usd"`
		}
		SummaryPrices *Prices `json:"summary_prices_per_million_tokens"`
	}
	if err := json.Unmarshal([]byte(out.String()), &k); err != nil {
		t.Fatal(err)
	}
	if math.Abs(k.Total.Cost-DefaultPrices.Cost(entry)) > 1e-12 || k.SummaryPrices != nil {
		t.Errorf("without summary prices the cost is %v and the summary prices %v, want %v and none", k.Total.Cost, k.SummaryPrices, DefaultPrices.Cost(entry))
	}
}
