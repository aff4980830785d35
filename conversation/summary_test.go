package conversation_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/conversation/storetest"
)

// cancelEcho is the storetest echo summarizer that ends a context once it
// has made a summary.
type cancelEcho struct {
	storetest.Echo
	cancel context.CancelFunc
}

func (s *cancelEcho) Summarize(ctx context.Context, in conversation.SummaryInput) (conversation.SummaryOutput, error) {
	defer s.cancel()
	return s.Echo.Summarize(ctx, in)
}

// TestSweepEveryFolds: serve's sweep moves an expired conversation to
// pending and folds it, so the next session finds the summary ready.
func TestSweepEveryFolds(t *testing.T) {
	clock := storetest.NewClock(storetest.Start)
	mem, err := conversation.New(memstore.New(), &conversation.Options{Now: clock.Now, Summarize: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("pizza on sunday", "ok")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(conversation.DefaultTimeout + time.Second)
	sum := &cancelEcho{cancel: cancel}
	mem.SweepEvery(ctx, time.Hour, slog.New(slog.DiscardHandler), sum)
	s, err := mem.LoadSummary(t.Context(), "+14155551234")
	if err != nil || !strings.Contains(s.Text, "pizza on sunday") || s.Pending != 0 {
		t.Errorf("after one sweep the summary is %+v, %v", s, err)
	}
}

// TestSummariesOff: without Options.Summarize, turns that leave a
// conversation are gone and no summary record is written.
func TestSummariesOff(t *testing.T) {
	clock := storetest.NewClock(storetest.Start)
	store := memstore.New()
	mem, _ := conversation.New(store, &conversation.Options{Now: clock.Now, MaxTurns: 1})
	ctx := t.Context()
	mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("one", "ok"))
	mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("two", "ok"))
	clock.Advance(conversation.DefaultTimeout + time.Second)
	mem.Sweep(ctx)
	if recs, _ := store.List(ctx, conversation.Summaries, ""); len(recs) != 0 {
		t.Errorf("summaries off, yet %d summary records", len(recs))
	}
}

// TestDeleteSummary: deleting a summary removes its text and keeps the
// turns still pending; a second delete finds nothing.
func TestDeleteSummary(t *testing.T) {
	clock := storetest.NewClock(storetest.Start)
	mem, err := conversation.New(memstore.New(), &conversation.Options{Now: clock.Now, MaxTurns: 1, Summarize: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const p = "+14155551234"
	mem.SaveTurn(ctx, p, storetest.TextTurn("pizza on sunday", "ok"))
	mem.SaveTurn(ctx, p, storetest.TextTurn("swim on monday", "ok"))
	if s, err := mem.FoldSummary(ctx, p, &storetest.Echo{}); err != nil || !strings.Contains(s.Text, "pizza on sunday") {
		t.Fatalf("the summary before deleting: %+v, %v", s, err)
	}
	mem.SaveTurn(ctx, p, storetest.TextTurn("chess on tuesday", "ok"))
	deleted, err := mem.DeleteSummary(ctx, p)
	if err != nil || !deleted {
		t.Fatalf("DeleteSummary = %v, %v; want true, nil", deleted, err)
	}
	s, err := mem.LoadSummary(ctx, p)
	if err != nil || s.Text != "" || s.Pending != 1 {
		t.Errorf("after deleting, the summary is %+v, %v; want no text and the one pending turn", s, err)
	}
	if deleted, err := mem.DeleteSummary(ctx, p); err != nil || deleted {
		t.Errorf("deleting again = %v, %v; want false, nil", deleted, err)
	}
	if _, err := mem.DeleteSummary(ctx, ""); err == nil {
		t.Error("DeleteSummary of a bad key: no error")
	}
}
