package migrate_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/conversation/migrate"
	"github.com/mombot/mombot/conversation/storetest"
)

// sameCounts reports whether two results count the same, whatever phones
// they name.
func sameCounts(a, b migrate.Result) bool {
	a.Conflicted, b.Conflicted = nil, nil
	return a.Copied == b.Copied && a.Unchanged == b.Unchanged && a.Newer == b.Newer &&
		a.Conflicts == b.Conflicts && a.Expired == b.Expired && a.Empty == b.Empty
}

// checkTurns checks that s holds, for each phone of want, turns whose
// first messages' texts, joined with commas, are want's.
func checkTurns(t *testing.T, s conversation.Store, want map[string]string) {
	t.Helper()
	for phone, w := range want {
		mem, _ := conversation.New(s, nil)
		c, err := mem.Load(context.Background(), phone)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, tr := range c.Turns {
			texts = append(texts, tr.Messages[0].Text())
		}
		if got := strings.Join(texts, ","); got != w {
			t.Errorf("%s: turns %q, want %q", phone, got, w)
		}
	}
}

// add saves a text turn for each of texts in s's conversation of phone, at
// the time at, under lim.
func add(t *testing.T, s conversation.Store, lim conversation.Limits, phone string, at time.Time, texts ...string) {
	t.Helper()
	mem, err := conversation.New(s, &conversation.Options{Timeout: lim.Timeout, MaxTurns: lim.MaxTurns, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range texts {
		if err := mem.SaveTurn(context.Background(), phone, storetest.TextTurn(text, "ok")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCopy: live conversations are copied, expired ones left behind, and a
// target conversation active later is kept.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 10}
	src, dst := memstore.New(), memstore.New()
	add(t, src, lim, "+1", now.Add(-time.Minute), "copy me", "and me")
	add(t, src, lim, "+2", now.Add(-time.Minute), "old copy")
	add(t, dst, lim, "+1", now.Add(-2*time.Hour), "stale") // expired: nothing to lose
	add(t, dst, lim, "+2", now, "live")
	add(t, src, lim, "+3", now.Add(-2*time.Hour), "expired")

	r, err := migrate.Copy(ctx, src, dst, &migrate.Options{Timeout: lim.Timeout, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if want := (migrate.Result{Copied: 1, Newer: 1, Expired: 1}); !sameCounts(r, want) {
		t.Errorf("result %+v, want %+v", r, want)
	}
	checkTurns(t, dst, map[string]string{"+1": "copy me,and me", "+2": "live"})
}

// TestTurnsCompared: which targets the source may replace, by their
// turns: a prefix of the source's (an interrupted copy), the same turns
// less the oldest ones the cap dropped since (an earlier copy), or an
// expired conversation; not one with a turn the source lacks.
func TestTurnsCompared(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 3}
	src, dst := memstore.New(), memstore.New()
	add(t, src, lim, "+1", now.Add(-time.Minute), "a", "b", "c")
	add(t, dst, lim, "+1", now.Add(-10*time.Minute), "a", "b") // prefix
	add(t, src, lim, "+2", now.Add(-time.Minute), "b", "c", "d")
	add(t, dst, lim, "+2", now.Add(-10*time.Minute), "a", "b", "c") // the cap dropped a
	add(t, src, lim, "+3", now.Add(-time.Minute), "a", "b")
	add(t, dst, lim, "+3", now.Add(-2*time.Hour), "x") // expired
	add(t, src, lim, "+4", now.Add(-time.Minute), "a", "b")
	add(t, dst, lim, "+4", now.Add(-10*time.Minute), "a", "x") // x only in the target

	r, err := migrate.Copy(ctx, src, dst, &migrate.Options{Timeout: lim.Timeout, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if want := (migrate.Result{Copied: 3, Conflicts: 1}); !sameCounts(r, want) {
		t.Errorf("result %+v, want %+v", r, want)
	}
	if got := strings.Join(r.Conflicted, " "); got != "+4" {
		t.Errorf("conflicts %q, want +4", got)
	}
	checkTurns(t, dst, map[string]string{"+1": "a,b,c", "+2": "b,c,d", "+3": "a,b", "+4": "a,x"})
}

// TestForceAndProgress: with Force a conflicting target is replaced by the
// source's conversation and still named; Progress sees every conversation
// and the end.
func TestForceAndProgress(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 10}
	src, dst := memstore.New(), memstore.New()
	for _, a := range []struct {
		s    conversation.Store
		p, x string
		at   time.Time
	}{
		{src, "+1", "source", now.Add(-time.Minute)},
		{dst, "+1", "target only", now.Add(-10 * time.Minute)},
		{src, "+2", "new", now.Add(-time.Minute)},
	} {
		add(t, a.s, lim, a.p, a.at, a.x)
	}
	var calls [][2]int
	r, err := migrate.Copy(ctx, src, dst, &migrate.Options{Timeout: time.Hour, Force: true, Now: func() time.Time { return now },
		Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := (migrate.Result{Copied: 2}); !sameCounts(r, want) || strings.Join(r.Conflicted, " ") != "+1" {
		t.Errorf("result %+v, want 2 copied and +1 named as a conflict", r)
	}
	checkTurns(t, dst, map[string]string{"+1": "source"})
	if len(calls) != 3 || calls[2] != [2]int{2, 2} {
		t.Errorf("progress calls %v, want 0/2, 1/2, 2/2", calls)
	}
}

// TestRecordsCopiedWhereMissing: the usage ledger and recent messages are
// copied where the target has no record under the key,
// and a target's own record is kept, so that copying twice never counts
// usage twice.
func TestRecordsCopiedWhereMissing(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	src, dst := memstore.New(), memstore.New()
	from, _ := conversation.New(src, &conversation.Options{Now: func() time.Time { return now }})
	to, _ := conversation.New(dst, &conversation.Options{Now: func() time.Time { return now }})
	day := now.Add(-48 * time.Hour)
	from.AddUsage(ctx, "+14155551234", day, conversation.Usage{Messages: 3})
	from.AddUsage(ctx, "+14155555678", day, conversation.Usage{Messages: 2})
	to.AddUsage(ctx, "+14155555678", day, conversation.Usage{Messages: 7})
	from.Remember(ctx, "+14155551234", conversation.RecentMessage{ID: "wamid.1", Role: conversation.RoleUser, Text: "hi", At: now})
	from.UpdateFamilyLists(ctx, func(l *conversation.FamilyLists) error {
		l.Add("grocery", []conversation.ListItem{{Text: "milk", AddedAt: now}})
		return nil
	})
	for i := range 2 {
		r, err := migrate.Copy(ctx, src, dst, &migrate.Options{Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		if r.Records+r.RecordsKept != 3 || r.ListItems != 1-i {
			t.Fatalf("copy %d: records copied %d, kept %d, list items %d; want 3 records in all and the list item the first time", i+1, r.Records, r.RecordsKept, r.ListItems)
		}
	}
	got, err := to.UsageSince(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Usage.Messages != 3 || got[1].Usage.Messages != 7 {
		t.Fatalf("target usage %+v, want 3 copied and the target's own 7 kept", got)
	}
	if m, err := to.Recall(ctx, "+14155551234", "wamid.1"); err != nil || m.Text != "hi" {
		t.Fatalf("recent message in the target: %+v, %v", m, err)
	}
	if l, err := to.FamilyLists(ctx); err != nil || len(l.Lists["grocery"]) != 1 || l.Lists["grocery"][0].Text != "milk" {
		t.Fatalf("lists in the target: %+v, %v", l, err)
	}
}

// TestNotesCopied: a family's notes are copied, ids and all, where the
// target has none; the target's own are kept.
func TestNotesCopied(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	src, dst := memstore.New(), memstore.New()
	from, _ := conversation.New(src, &conversation.Options{Now: func() time.Time { return now }})
	to, _ := conversation.New(dst, &conversation.Options{Now: func() time.Time { return now }})
	fam := conversation.Family{ID: "family", Members: map[string]string{"+14155551234": "Erin"}}
	other := conversation.Family{ID: "smiths", Members: map[string]string{"+14155555678": "Ann"}}
	for _, n := range []string{"Emma is allergic to peanuts", "Soccer on Saturdays"} {
		if _, _, err := from.AddNote(ctx, fam, "+14155551234", conversation.NewNote{Text: n, Scope: "family"}); err != nil {
			t.Fatal(err)
		}
	}
	from.AddNote(ctx, other, "+14155555678", conversation.NewNote{Text: "source's", Scope: "family"})
	to.AddNote(ctx, other, "+14155555678", conversation.NewNote{Text: "target's own", Scope: "family"})
	if _, err := migrate.Copy(ctx, src, dst, &migrate.Options{Now: func() time.Time { return now }}); err != nil {
		t.Fatal(err)
	}
	notes, err := to.Notes(ctx, fam, "+14155551234")
	if err != nil || len(notes) != 2 || notes[1].ID != 2 || notes[1].Text != "Soccer on Saturdays" {
		t.Fatalf("notes in the target: %+v, %v", notes, err)
	}
	if n, _, _ := to.AddNote(ctx, fam, "+14155551234", conversation.NewNote{Text: "third", Scope: "family"}); n.ID != 3 {
		t.Errorf("the next id in the target is %d, want 3", n.ID)
	}
	if kept, _ := to.Notes(ctx, other, "+14155555678"); len(kept) != 1 || kept[0].Text != "target's own" {
		t.Errorf("the target's own notes = %+v, want them kept", kept)
	}
}

// TestListsMerged: the family's lists are merged into the target's, as the
// import of replicas' lists.json files merges them: an item on both, in
// any case, is kept once as the target had it, the source's other items
// follow, each list is kept, and copying again adds nothing.
func TestListsMerged(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	src, dst := memstore.New(), memstore.New()
	from, _ := conversation.New(src, nil)
	to, _ := conversation.New(dst, nil)
	lists := func(mem *conversation.Memory, items map[string][]string, removed ...string) {
		t.Helper()
		err := mem.UpdateFamilyLists(ctx, func(l *conversation.FamilyLists) error {
			for name, texts := range items {
				for _, text := range texts {
					l.Add(name, []conversation.ListItem{{Text: text, AddedAt: now}})
				}
			}
			for _, text := range removed {
				l.Removed = append(l.Removed, conversation.RemovedItem{List: "grocery", ListItem: conversation.ListItem{Text: text}, RemovedAt: now, Removal: 1})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	lists(to, map[string][]string{"grocery": {"Milk", "bread"}, "to-do": {"call mom"}}, "jam")
	lists(from, map[string][]string{"grocery": {"milk", "eggs"}, "hardware": {"nails"}}, "jam", "butter")
	for i, want := range []int{2, 0} {
		r, err := migrate.Copy(ctx, src, dst, nil)
		if err != nil || r.ListItems != want {
			t.Fatalf("copy %d: %d list items merged, %v; want %d", i+1, r.ListItems, err, want)
		}
	}
	l, err := to.FamilyLists(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, items := range l.Lists {
		var texts []string
		for _, it := range items {
			texts = append(texts, it.Text)
		}
		got[name] = strings.Join(texts, ",")
	}
	want := map[string]string{"grocery": "Milk,bread,eggs", "to-do": "call mom", "hardware": "nails"}
	if !maps.Equal(got, want) {
		t.Errorf("the target's lists = %q, want %q", got, want)
	}
	var removed []string
	for _, r := range l.Removed {
		removed = append(removed, fmt.Sprintf("%s#%d", r.Text, r.Removal))
	}
	if got := strings.Join(removed, ","); got != "jam#1,butter#2" {
		t.Errorf("the target's removed items = %s, want jam once and butter as a later removal", got)
	}
}

// TestSummariesCopied: each person's running summary is copied to a target
// that has none for them, and a summary the target has already is kept.
func TestSummariesCopied(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Start)
	opts := &conversation.Options{Now: clock.Now, Summarize: func(string) bool { return true }}
	src, dst := memstore.New(), memstore.New()
	from, _ := conversation.New(src, opts)
	to, _ := conversation.New(dst, opts)
	for mem, people := range map[*conversation.Memory]map[string]string{
		from: {"+14155551234": "pizza on sunday", "+14155555678": "soccer at 9"},
		to:   {"+14155555678": "the target's own"},
	} {
		for phone, said := range people {
			if err := mem.SaveTurn(ctx, phone, storetest.TextTurn(said, "ok")); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(conversation.DefaultTimeout + time.Second)
		for phone := range people {
			if _, err := mem.Expire(ctx, phone); err != nil {
				t.Fatal(err)
			}
			if _, err := mem.FoldSummary(ctx, phone, &storetest.Echo{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := migrate.Copy(ctx, src, dst, &migrate.Options{Now: clock.Now}); err != nil {
		t.Fatal(err)
	}
	for phone, want := range map[string]string{"+14155551234": "- pizza on sunday", "+14155555678": "- the target's own"} {
		if s, err := to.LoadSummary(ctx, phone); err != nil || s.Text != want {
			t.Errorf("the target's summary of %s = %q, %v; want %q", phone, s.Text, err, want)
		}
	}
}
