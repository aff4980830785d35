package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// usageTests are the cases of the usage ledger ([conversation.Memory.AddUsage]),
// which every store keeps next to its conversations. Each says which rule it
// checks.
var usageTests = []struct {
	name string
	rule string
	fn   func(t *testing.T, e *env)
}{
	{"UsageEmpty", "a store that has recorded nothing reports no usage", testUsageEmpty},
	{"UsageAddsUp", "additions for one phone on one day are summed count by count, none mixed up with another", testUsageAddsUp},
	{"UsageDaysAreUTC", "days are UTC calendar days: the last instant of a UTC day and the first of the next are two days, and a time in another zone counts on its UTC day", testUsageDaysUTC},
	{"UsagePhonesApart", "each phone has its own usage", testUsagePhonesApart},
	{"UsageSince", "UsageSince leaves out the days before since's UTC day and orders entries by day, then phone", testUsageSince},
	{"UsageOutlivesConversation", "clearing, expiring and sweeping a conversation leave its usage as it was, and recording usage makes no conversation", testUsageOutlives},
	{"UsageAcrossReopen", "the ledger survives closing and reopening the store", testUsageReopen},
	{"UsageInvalid", "a negative count or a bad phone is refused with its sentinel and adds nothing; the system sender and an all-zero usage are not recorded", testUsageInvalid},
	{"UsageConcurrent", "concurrent additions, from many goroutines and from two stores open on the same storage (as two processes or replicas), are never lost", testUsageConcurrent},
}

// runUsage runs the ledger cases as part of [Run].
func runUsage(t *testing.T, newStorage NewStorage) {
	for _, tt := range usageTests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, newStorage)
			defer e.checkInvariants()
			defer func() {
				if t.Failed() {
					t.Logf("rule: %s", tt.rule)
				}
			}()
			tt.fn(t, e)
		})
	}
}

// ledger returns the store's usage ledger; every store must keep one.
func (e *env) ledger() *conversation.Memory { return e.mem }

func (e *env) addUsage(phone string, at time.Time, u conversation.Usage) {
	e.t.Helper()
	if err := e.ledger().AddUsage(context.Background(), phone, at, u); err != nil {
		e.t.Fatalf("AddUsage(%q, %v): %v", phone, at, err)
	}
}

func (e *env) usageSince(since time.Time) []conversation.DailyUsage {
	e.t.Helper()
	got, err := e.ledger().UsageSince(context.Background(), since)
	if err != nil {
		e.t.Fatalf("UsageSince(%v): %v", since, err)
	}
	return got
}

// assertUsage fails unless got is want, entry by entry.
func assertUsage(t *testing.T, got, want []conversation.DailyUsage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d:\ngot  %s\nwant %s", len(got), len(want), fmtUsage(got), fmtUsage(want))
	}
	for i := range got {
		if got[i].Phone != want[i].Phone || !got[i].Day.Equal(want[i].Day) || got[i].Usage != want[i].Usage {
			t.Fatalf("entry %d:\ngot  %s\nwant %s", i, fmtUsage(got[i:i+1]), fmtUsage(want[i:i+1]))
		}
		if got[i].Day.Location() != time.UTC {
			t.Fatalf("entry %d: Day %v is not in UTC", i, got[i].Day)
		}
	}
}

func fmtUsage(us []conversation.DailyUsage) string {
	s := ""
	for _, u := range us {
		s += fmt.Sprintf("\n  %s %s %+v", u.Day.Format(conversation.UsageDayLayout), u.Phone, u.Usage)
	}
	return s
}

// someUsage returns a usage whose counts all differ, scaled by n, so that a
// count stored in the wrong place shows.
func someUsage(n int64) conversation.Usage {
	return conversation.Usage{Messages: 1 * n, Tokens: conversation.Tokens{
		Calls: 2 * n, InputTokens: 300 * n, CacheWrite5mTokens: 5000 * n,
		CacheWrite1hTokens: 70000 * n, CacheReadTokens: 900000 * n, OutputTokens: 11000000 * n,
	}}
}

// day returns midnight UTC of the date.
func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

const (
	usagePhoneA = "+14155551234"
	usagePhoneB = "+14155555678"
)

func testUsageEmpty(t *testing.T, e *env) {
	if got := e.usageSince(time.Time{}); len(got) != 0 {
		t.Fatalf("UsageSince of an empty store = %s, want none", fmtUsage(got))
	}
}

func testUsageAddsUp(t *testing.T, e *env) {
	at := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	e.addUsage(usagePhoneA, at, someUsage(1))
	e.addUsage(usagePhoneA, at.Add(3*time.Hour), someUsage(2))
	e.addUsage(usagePhoneA, at.Add(5*time.Hour), conversation.Usage{Tokens: conversation.Tokens{OutputTokens: 7}})
	want := someUsage(3)
	want.OutputTokens += 7
	assertUsage(t, e.usageSince(time.Time{}), []conversation.DailyUsage{{Phone: usagePhoneA, Day: day(2026, 2, 24), Usage: want}})
}

func testUsageDaysUTC(t *testing.T, e *env) {
	midnight := day(2026, 2, 25)
	e.addUsage(usagePhoneA, midnight.Add(-time.Nanosecond), someUsage(1))
	e.addUsage(usagePhoneA, midnight, someUsage(2))
	// 2026-02-24 20:00 in Los Angeles is 2026-02-25 04:00 UTC.
	la := time.FixedZone("PST", -8*3600)
	e.addUsage(usagePhoneA, time.Date(2026, 2, 24, 20, 0, 0, 0, la), someUsage(4))
	assertUsage(t, e.usageSince(time.Time{}), []conversation.DailyUsage{
		{Phone: usagePhoneA, Day: day(2026, 2, 24), Usage: someUsage(1)},
		{Phone: usagePhoneA, Day: day(2026, 2, 25), Usage: someUsage(6)},
	})
}

func testUsagePhonesApart(t *testing.T, e *env) {
	at := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	e.addUsage(usagePhoneA, at, someUsage(1))
	e.addUsage(usagePhoneB, at, someUsage(10))
	assertUsage(t, e.usageSince(time.Time{}), []conversation.DailyUsage{
		{Phone: usagePhoneA, Day: day(2026, 2, 24), Usage: someUsage(1)},
		{Phone: usagePhoneB, Day: day(2026, 2, 24), Usage: someUsage(10)},
	})
}

func testUsageSince(t *testing.T, e *env) {
	for i, d := range []int{20, 22, 24} {
		e.addUsage(usagePhoneB, day(2026, 2, d).Add(time.Hour), someUsage(int64(i+1)))
		e.addUsage(usagePhoneA, day(2026, 2, d).Add(2*time.Hour), someUsage(int64(i+4)))
	}
	all := []conversation.DailyUsage{
		{Phone: usagePhoneA, Day: day(2026, 2, 20), Usage: someUsage(4)},
		{Phone: usagePhoneB, Day: day(2026, 2, 20), Usage: someUsage(1)},
		{Phone: usagePhoneA, Day: day(2026, 2, 22), Usage: someUsage(5)},
		{Phone: usagePhoneB, Day: day(2026, 2, 22), Usage: someUsage(2)},
		{Phone: usagePhoneA, Day: day(2026, 2, 24), Usage: someUsage(6)},
		{Phone: usagePhoneB, Day: day(2026, 2, 24), Usage: someUsage(3)},
	}
	assertUsage(t, e.usageSince(time.Time{}), all)
	// Any instant of a day, in any zone, selects that whole UTC day on.
	assertUsage(t, e.usageSince(day(2026, 2, 22).Add(23*time.Hour)), all[2:])
	assertUsage(t, e.usageSince(day(2026, 2, 21)), all[2:])
	assertUsage(t, e.usageSince(time.Date(2026, 2, 24, 1, 0, 0, 0, time.FixedZone("CET", 3600))), all[4:])
	assertUsage(t, e.usageSince(day(2026, 2, 25)), nil)
}

func testUsageOutlives(t *testing.T, e *env) {
	phone := usagePhoneA
	e.addUsage(usagePhoneB, e.clock.Now(), someUsage(1))
	if sums, err := e.mem.List(ctx()); err != nil || len(sums) != 0 {
		t.Fatalf("List after recording usage only = %v, %v; the ledger must make no conversation", sums, err)
	}
	if _, err := e.mem.Load(ctx(), usagePhoneB); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Load of a phone with usage only: err = %v, want ErrNotFound", err)
	}

	want := []conversation.DailyUsage{
		{Phone: phone, Day: conversation.UsageDay(e.clock.Now()), Usage: someUsage(2)},
		{Phone: usagePhoneB, Day: conversation.UsageDay(e.clock.Now()), Usage: someUsage(1)},
	}
	e.save(phone, TextTurn("hello", "hi")...)
	e.addUsage(phone, e.clock.Now(), someUsage(2))
	if err := e.mem.Clear(ctx(), phone); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	assertUsage(t, e.usageSince(time.Time{}), want)

	e.save(phone, TextTurn("hello again", "hi again")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	if h := e.history(phone); len(h) != 0 { // deletes the expired conversation
		t.Fatalf("History after the timeout = %s, want []", dump(h))
	}
	assertUsage(t, e.usageSince(time.Time{}), want)

	e.save(phone, TextTurn("and again", "yes")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	if _, err := e.mem.Sweep(ctx()); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	assertUsage(t, e.usageSince(time.Time{}), want)
}

func testUsageReopen(t *testing.T, e *env) {
	at := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	e.addUsage(usagePhoneA, at, someUsage(1))
	e.reopen(nil)
	e.addUsage(usagePhoneA, at, someUsage(2))
	e.reopen(nil)
	assertUsage(t, e.usageSince(time.Time{}), []conversation.DailyUsage{{Phone: usagePhoneA, Day: day(2026, 2, 24), Usage: someUsage(3)}})
}

func testUsageInvalid(t *testing.T, e *env) {
	at := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	e.addUsage(usagePhoneA, at, someUsage(1))
	l := e.ledger()
	bad := someUsage(1)
	bad.CacheReadTokens = -1
	if err := l.AddUsage(ctx(), usagePhoneA, at, bad); !errors.Is(err, conversation.ErrInvalidUsage) {
		t.Errorf("AddUsage with a negative count: err = %v, want ErrInvalidUsage", err)
	}
	for _, phone := range []string{"", " +14155551234", "+1415\n5551234"} {
		if err := l.AddUsage(ctx(), phone, at, someUsage(1)); !errors.Is(err, conversation.ErrInvalidPhone) {
			t.Errorf("AddUsage(%q): err = %v, want ErrInvalidPhone", phone, err)
		}
	}
	if err := l.AddUsage(ctx(), conversation.SystemSender, at, someUsage(1)); err != nil {
		t.Errorf("AddUsage for the system sender: %v, want nil (and nothing recorded)", err)
	}
	if err := l.AddUsage(ctx(), usagePhoneB, at, conversation.Usage{}); err != nil {
		t.Errorf("AddUsage of zeros: %v, want nil (and nothing recorded)", err)
	}
	assertUsage(t, e.usageSince(time.Time{}), []conversation.DailyUsage{{Phone: usagePhoneA, Day: day(2026, 2, 24), Usage: someUsage(1)}})
}

func testUsageConcurrent(t *testing.T, e *env) {
	second, err := e.open()
	if err != nil {
		t.Fatalf("open a second store on the same storage: %v", err)
	}
	t.Cleanup(func() {
		if second != e.store {
			second.Close()
		}
	})
	other, err := conversation.New(second, &e.opts)
	if err != nil {
		t.Fatal(err)
	}
	ledgers := []*conversation.Memory{e.ledger(), other}
	const workers, adds = 6, 10
	at := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, workers*adds)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := ledgers[w%len(ledgers)]
			phone := []string{usagePhoneA, usagePhoneB}[w%4/2] // each phone from both stores
			for range adds {
				if err := l.AddUsage(ctx(), phone, at, someUsage(1)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent AddUsage: %v", err)
	}
	// Workers 0, 1, 4, 5 add for A, and 2, 3 for B.
	assertUsage(t, e.usageSince(time.Time{}), []conversation.DailyUsage{
		{Phone: usagePhoneA, Day: day(2026, 2, 24), Usage: someUsage(4 * adds)},
		{Phone: usagePhoneB, Day: day(2026, 2, 24), Usage: someUsage(2 * adds)},
	})
}
