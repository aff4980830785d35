package conversation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/phone"
)

func TestUsageDay(t *testing.T) {
	la := time.FixedZone("PST", -8*3600)
	tests := []struct {
		name string
		at   time.Time
		want string
	}{
		{"midday UTC", time.Date(2026, 2, 24, 12, 0, 0, 0, time.UTC), "2026-02-24"},
		{"the first instant of a UTC day", time.Date(2026, 2, 24, 0, 0, 0, 0, time.UTC), "2026-02-24"},
		{"the last instant of a UTC day", time.Date(2026, 2, 24, 23, 59, 59, 999999999, time.UTC), "2026-02-24"},
		{"an evening in Los Angeles is the next UTC day", time.Date(2026, 2, 24, 20, 0, 0, 0, la), "2026-02-25"},
		{"the end of a leap year", time.Date(2028, 12, 31, 23, 0, 0, 0, time.UTC), "2028-12-31"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := conversation.UsageDay(tt.at)
			if got.Format(conversation.UsageDayLayout) != tt.want || got.Location() != time.UTC || got.Hour() != 0 || got.Nanosecond() != 0 {
				t.Errorf("UsageDay(%v) = %v, want midnight UTC of %s", tt.at, got, tt.want)
			}
		})
	}
}

func TestUsageArithmeticAndChecks(t *testing.T) {
	a := conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 2, InputTokens: 3, CacheWrite5mTokens: 4, CacheWrite1hTokens: 5, CacheReadTokens: 6, OutputTokens: 7}}
	if got := a.Add(a); got != (conversation.Usage{Messages: 2, Tokens: conversation.Tokens{Calls: 4, InputTokens: 6, CacheWrite5mTokens: 8, CacheWrite1hTokens: 10, CacheReadTokens: 12, OutputTokens: 14}}) {
		t.Errorf("Add = %+v", got)
	}
	if got := a.PromptTokens(); got != 3+4+5+6 {
		t.Errorf("PromptTokens = %d, want input, writes and reads", got)
	}
	if !(conversation.Usage{}).IsZero() || a.IsZero() {
		t.Error("IsZero is wrong")
	}
	for _, tt := range []struct {
		phone string
		u     conversation.Usage
		skip  bool
		err   error
	}{
		{"+14155551234", a, false, nil},
		{"+14155551234", conversation.Usage{}, true, nil},
		{conversation.SystemSender, a, true, nil},
		{"+14155551234", conversation.Usage{Tokens: conversation.Tokens{OutputTokens: -1}}, false, conversation.ErrInvalidUsage},
		{"", a, false, conversation.ErrInvalidPhone},
	} {
		skip, err := conversation.CheckAddUsage(tt.phone, tt.u)
		if skip != tt.skip || !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
			t.Errorf("CheckAddUsage(%q, %+v) = %v, %v; want %v, %v", tt.phone, tt.u, skip, err, tt.skip, tt.err)
		}
	}
}

// The usage ledger counts each person's messages per UTC day, and
// keeps them when the conversation is cleared.
func ExampleMemory_AddUsage() {
	ctx := context.Background()
	mem, _ := conversation.New(memstore.New(), nil) // every store keeps a ledger
	ledger := mem

	at := time.Date(2026, 2, 24, 18, 30, 0, 0, time.UTC)
	ledger.AddUsage(ctx, "+14155551234", at, conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 2, InputTokens: 40, CacheWrite5mTokens: 900, CacheReadTokens: 2000, OutputTokens: 150}})
	ledger.AddUsage(ctx, "+14155551234", at.Add(time.Hour), conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, InputTokens: 30, CacheReadTokens: 2900, OutputTokens: 80}})
	mem.Clear(ctx, "+14155551234") // the conversation goes, the usage stays

	days, _ := ledger.UsageSince(ctx, time.Time{})
	for _, d := range days {
		fmt.Printf("%s %s: %d messages, %d calls, %d of %d prompt tokens read from the cache\n",
			d.Day.Format(conversation.UsageDayLayout), phone.Mask(d.Phone), d.Messages, d.Calls, d.CacheReadTokens, d.PromptTokens())
	}
	// Output:
	// 2026-02-24 +*******1234: 2 messages, 3 calls, 4900 of 5870 prompt tokens read from the cache
}

// TestUsageSummarizerPart: the summarizer's part adds up with the rest,
// is what Main leaves out, and may be neither negative nor more than the
// whole.
func TestUsageSummarizerPart(t *testing.T) {
	s := conversation.Tokens{Calls: 1, InputTokens: 10, OutputTokens: 5}
	a := conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 2, InputTokens: 100, OutputTokens: 50}}
	b := conversation.Usage{Tokens: conversation.Tokens{Calls: 1, InputTokens: 10, OutputTokens: 5}, Summarizer: s}
	sum := a.Add(b)
	if sum.Summarizer != s || sum.Main() != a.Tokens || sum.Check() != nil {
		t.Errorf("sum %+v: main %+v, check %v; want the summarizer's %+v apart", sum, sum.Main(), sum.Check(), s)
	}
	if err := (conversation.Usage{Tokens: conversation.Tokens{Calls: 1}, Summarizer: conversation.Tokens{Calls: 2}}).Check(); !errors.Is(err, conversation.ErrInvalidUsage) {
		t.Errorf("a summarizer's part over the whole: %v, want ErrInvalidUsage", err)
	}
	if err := (conversation.Usage{Summarizer: conversation.Tokens{OutputTokens: -1}}).Check(); !errors.Is(err, conversation.ErrInvalidUsage) {
		t.Errorf("a negative summarizer's count: %v, want ErrInvalidUsage", err)
	}
	data, _ := json.Marshal(a)
	if strings.Contains(string(data), "summarizer") {
		t.Errorf("a usage without summaries is stored as %s", data)
	}
}

// TestAddUsageDamagedRecord: a day's stored usage that does not parse is
// an error naming the phone masked, as it reaches the log, and the record
// is left as it is rather than counted again from zero.
func TestAddUsageDamagedRecord(t *testing.T) {
	ctx := context.Background()
	const number = "+14155551234"
	at := time.Date(2026, 2, 24, 12, 0, 0, 0, time.UTC)
	store := memstore.New()
	key := "2026-02-24/" + number
	if _, err := store.Put(ctx, conversation.UsageDays, conversation.Record{Key: key, Data: []byte(`{"calls":`)}, 0); err != nil {
		t.Fatal(err)
	}
	mem, err := conversation.New(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = mem.AddUsage(ctx, number, at, conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1}})
	if err == nil || strings.Contains(err.Error(), number) || !strings.Contains(err.Error(), phone.Mask(number)) {
		t.Errorf("AddUsage on a damaged day = %v; want an error naming %s masked", err, number)
	}
	if rec, err := store.Get(ctx, conversation.UsageDays, key); err != nil || string(rec.Data) != `{"calls":` {
		t.Errorf("the damaged record is now %q, %v; want it left as it was", rec.Data, err)
	}
}
