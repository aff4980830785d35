package conversation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
)

func TestParseRetention(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"395d", 395 * 24 * time.Hour, true},
		{"1d", 24 * time.Hour, true},
		{"9480h", 9480 * time.Hour, true},
		{"0d", 0, false},
		{"-3d", 0, false},
		{"d", 0, false},
		{"1.5d", 0, false},
		{"0s", 0, false},
		{"-1h", 0, false},
		{"a year", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := conversation.ParseRetention(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ParseRetention(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

// retentionEnv is a memory on a memstore whose clock the test sets.
type retentionEnv struct {
	t     *testing.T
	store *memstore.Store
	mem   *conversation.Memory
	now   time.Time
}

func newRetentionEnv(t *testing.T, keep time.Duration) *retentionEnv {
	t.Helper()
	e := &retentionEnv{t: t, store: memstore.New(), now: time.Date(2027, 6, 15, 12, 0, 0, 0, time.UTC)}
	mem, err := conversation.New(e.store, &conversation.Options{UsageRetention: keep, Now: func() time.Time { return e.now }, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	e.mem = mem
	return e
}

func (e *retentionEnv) add(phone string, at time.Time, msgs int64) {
	e.t.Helper()
	if err := e.mem.AddUsage(context.Background(), phone, at, conversation.Usage{Messages: msgs, Tokens: conversation.Tokens{Calls: msgs, OutputTokens: 10 * msgs}}); err != nil {
		e.t.Fatalf("AddUsage: %v", err)
	}
}

func (e *retentionEnv) keys(kind conversation.Kind) []string {
	e.t.Helper()
	recs, err := e.store.List(context.Background(), kind, "")
	if err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for _, r := range recs {
		if err := conversation.CheckRecord(kind, r, conversation.Limits{}); err != nil {
			e.t.Errorf("stored record breaks the invariant: %v", err)
		}
		keys = append(keys, r.Key)
	}
	return keys
}

func TestSweepFoldsOldUsage(t *testing.T) {
	e := newRetentionEnv(t, 0)
	const a, b = "+14155550101", "+14155550102"
	old := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)    // 521 days before now: folded
	edge := e.now.Add(-conversation.DefaultUsageRetention) // the oldest day kept
	recent := time.Date(2027, 6, 1, 9, 0, 0, 0, time.UTC)
	e.add(a, old, 2)
	e.add(b, old, 3)
	e.add(a, old.Add(24*time.Hour), 1)
	e.add(a, edge, 4)
	e.add(b, recent, 5)
	before, err := e.mem.UsageSince(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var total conversation.Usage
	for _, d := range before {
		total = total.Add(d.Usage)
	}

	if _, err := e.mem.Sweep(context.Background()); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	got := e.keys(conversation.UsageDays)
	want := []string{"2026-01-10/*", "2026-01-11/*", edge.Format(time.DateOnly) + "/" + a, "2027-06-01/" + b}
	if len(got) != len(want) {
		t.Fatalf("ledger keys after the sweep = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ledger keys after the sweep = %q, want %q", got, want)
		}
	}
	after, err := e.mem.UsageSince(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var sum conversation.Usage
	for _, d := range after {
		sum = sum.Add(d.Usage)
	}
	if sum != total {
		t.Errorf("the ledger's total after folding = %+v, want %+v as before", sum, total)
	}
	if after[0].Phone != conversation.Anonymous || after[0].Messages != 5 || after[0].OutputTokens != 50 {
		t.Errorf("the first day after folding = %+v, want the anonymous total of 5 messages", after[0])
	}

	// A second sweep changes nothing; a day added to later is folded
	// into the same total.
	e.add(b, old, 1)
	if _, err := e.mem.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mem.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	after, _ = e.mem.UsageSince(context.Background(), time.Time{})
	if after[0].Phone != conversation.Anonymous || after[0].Messages != 6 {
		t.Errorf("the first day after two more sweeps = %+v, want the anonymous total of 6 messages", after[0])
	}
}

func TestSweepUsageRetentionSetting(t *testing.T) {
	e := newRetentionEnv(t, 30*24*time.Hour)
	const a = "+14155550101"
	e.add(a, e.now.Add(-40*24*time.Hour), 1)
	e.add(a, e.now.Add(-20*24*time.Hour), 1)
	if _, err := e.mem.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := e.keys(conversation.UsageDays)
	if len(got) != 2 || got[0] != e.now.Add(-40*24*time.Hour).Format(time.DateOnly)+"/*" || got[1] != e.now.Add(-20*24*time.Hour).Format(time.DateOnly)+"/"+a {
		t.Errorf("with a 30-day retention the ledger holds %q, want the 40-day-old day anonymous and the 20-day-old one as it was", got)
	}
}

func TestAddUsageRefusesAnonymous(t *testing.T) {
	e := newRetentionEnv(t, 0)
	err := e.mem.AddUsage(context.Background(), conversation.Anonymous, e.now, conversation.Usage{Messages: 1})
	if !errors.Is(err, conversation.ErrInvalidPhone) {
		t.Errorf("AddUsage(%q) = %v, want ErrInvalidPhone", conversation.Anonymous, err)
	}
}

func TestAbout(t *testing.T) {
	const p = "+14155550101"
	tests := []struct {
		kind conversation.Kind
		key  string
		want bool
	}{
		{conversation.Conversations, p, true},
		{conversation.Conversations, "+14155550102", false},
		{conversation.Recent, p, true},
		{conversation.UsageDays, "2026-01-10/" + p, true},
		{conversation.UsageDays, "2026-01-10/*", false},
		{conversation.UsageDays, "2026-01-10/" + p + "9", false},
		{"reminders", p + "/groceries", true},
		{"reminders", p + "9/groceries", false},
		// A family's notes are about nobody: Erase takes a person's
		// notes out of them rather than deleting the family's.
		{conversation.Notes, conversation.DefaultFamilyID, false},
		{conversation.Notes, p, false},
		{"summaries", "2026-01/" + p, true},
		{"lists", "family", false},
	}
	for _, tt := range tests {
		if got := conversation.About(tt.kind, tt.key, p); got != tt.want {
			t.Errorf("About(%q, %q, %q) = %v, want %v", tt.kind, tt.key, p, got, tt.want)
		}
	}
}

func TestErase(t *testing.T) {
	ctx := context.Background()
	e := newRetentionEnv(t, 0)
	const a, b = "+14155550101", "+14155550102"
	for _, p := range []string{a, b} {
		if err := e.mem.SaveTurn(ctx, p, []conversation.Message{conversation.NewMessage(conversation.RoleUser, conversation.TextBlock("hi from "+p)), conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("hello"))}); err != nil {
			t.Fatal(err)
		}
		if err := e.mem.Remember(ctx, p, conversation.RecentMessage{ID: "wamid." + p, Role: conversation.RoleUser, Text: "hi", At: e.now}); err != nil {
			t.Fatal(err)
		}
		e.add(p, e.now, 1)
		e.add(p, e.now.Add(-24*time.Hour), 1)
	}
	e.add(a, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), 1)
	if _, err := e.mem.Sweep(ctx); err != nil { // folds 2025-01-01
		t.Fatal(err)
	}

	got, err := e.mem.Erase(ctx, a)
	if err != nil {
		t.Fatalf("Erase: %v", err)
	}
	want := conversation.Erased{conversation.Conversations: 1, conversation.Recent: 1, conversation.UsageDays: 2}
	if got.String() != want.String() || got.Total() != 4 {
		t.Errorf("Erase = %v (total %d), want %v", got, got.Total(), want)
	}
	for _, kind := range conversation.Kinds {
		for _, k := range e.keys(kind) {
			if conversation.About(kind, k, a) {
				t.Errorf("after Erase, %s record %q is still stored", kind, k)
			}
		}
	}
	if h, _ := e.mem.History(ctx, a); len(h) != 0 {
		t.Errorf("after Erase, History = %d messages, want none", len(h))
	}
	if h, _ := e.mem.History(ctx, b); len(h) != 2 {
		t.Errorf("Erase of another number left %d messages of %s, want 2", len(h), b)
	}
	if keys := e.keys(conversation.UsageDays); len(keys) != 3 {
		t.Errorf("after Erase the ledger holds %q, want the anonymous day and the other number's two days", keys)
	}
	again, err := e.mem.Erase(ctx, a)
	if err != nil || again.Total() != 0 {
		t.Errorf("Erase again = %v, %v; want nothing erased", again, err)
	}
	if _, err := e.mem.Erase(ctx, conversation.Anonymous); !errors.Is(err, conversation.ErrInvalidPhone) {
		t.Errorf("Erase(%q) = %v, want ErrInvalidPhone", conversation.Anonymous, err)
	}
}
