package migrate_test

import (
	"context"
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
		c, err := s.Load(context.Background(), phone)
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

// TestWithoutReplacer runs the copy into a store that cannot replace
// atomically: the same policy holds through deletes and appends.
func TestWithoutReplacer(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 10}
	src, dst := memstore.New(), memstore.New()
	var _ conversation.Store = dst
	if _, ok := conversation.Store(dst).(conversation.Replacer); ok {
		t.Fatal("memstore is a Replacer; this test needs a store that is not")
	}
	add := func(s conversation.Store, phone, text string, at time.Time) {
		t.Helper()
		if err := s.Append(ctx, phone, conversation.Turn{Messages: storetest.TextTurn(text, "ok")}, at, lim); err != nil {
			t.Fatal(err)
		}
	}
	add(src, "+1", "copy me", now.Add(-time.Minute))
	add(src, "+1", "and me", now.Add(-time.Minute))
	add(src, "+2", "old copy", now.Add(-time.Minute))
	add(dst, "+1", "stale", now.Add(-2*time.Hour)) // expired: nothing to lose
	add(dst, "+2", "live", now)
	add(src, "+3", "expired", now.Add(-2*time.Hour))

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
	add := func(s conversation.Store, phone string, at time.Time, texts ...string) {
		t.Helper()
		for _, text := range texts {
			if err := s.Append(ctx, phone, conversation.Turn{Messages: storetest.TextTurn(text, "ok")}, at, lim); err != nil {
				t.Fatal(err)
			}
		}
	}
	src, dst := memstore.New(), memstore.New()
	add(src, "+1", now.Add(-time.Minute), "a", "b", "c")
	add(dst, "+1", now.Add(-10*time.Minute), "a", "b") // prefix
	add(src, "+2", now.Add(-time.Minute), "b", "c", "d")
	add(dst, "+2", now.Add(-10*time.Minute), "a", "b", "c") // the cap dropped a
	add(src, "+3", now.Add(-time.Minute), "a", "b")
	add(dst, "+3", now.Add(-2*time.Hour), "x") // expired
	add(src, "+4", now.Add(-time.Minute), "a", "b")
	add(dst, "+4", now.Add(-10*time.Minute), "a", "x") // x only in the target

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
		if err := a.s.Append(ctx, a.p, conversation.Turn{Messages: storetest.TextTurn(a.x, "ok")}, a.at, lim); err != nil {
			t.Fatal(err)
		}
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
	if c, _ := dst.Load(ctx, "+1"); len(c.Turns) != 1 || c.Turns[0].Messages[0].Text() != "source" {
		t.Errorf("+1 in the target: %+v, want the source's turn", c.Turns)
	}
	if len(calls) != 3 || calls[2] != [2]int{2, 2} {
		t.Errorf("progress calls %v, want 0/2, 1/2, 2/2", calls)
	}
}
