package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// runSummaries runs the cases of the running summaries
// ([conversation.Summaries]): turns that leave a conversation are kept as
// pending until a summarizer folds them, on every store, with no code of
// the store's own.
func runSummaries(t *testing.T, newStorage NewStorage) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"SummariesCapKeepsDroppedTurns", testSummariesCap},
		{"SummariesExpiryKeepsTurns", testSummariesExpiry},
		{"SummariesSweepKeepsTurns", testSummariesSweep},
		{"SummariesFold", testSummariesFold},
		{"SummariesFoldFailureKeepsTurns", testSummariesFoldFailure},
		{"SummariesConcurrentFolds", testSummariesConcurrent},
		{"SummariesForget", testSummariesForget},
		{"SummariesDropReplacedNote", testSummariesDropReplaced},
		{"SummariesKeep", testSummariesKeep},
		{"SummariesErase", testSummariesErase},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, newStorage)
			e.reopen(&conversation.Options{Summarize: func(p string) bool { return p == erin }})
			defer e.checkInvariants()
			tt.fn(t, e)
		})
	}
}

// Echo is a summarizer for tests that writes, after the previous summary,
// one line per turn with the person's text, and counts its calls. It is
// the worst a model could do: it restates everything.
type Echo struct {
	mu    sync.Mutex
	Calls int
	Err   error
	// Family, if set, is the notes' family the summaries are said to be
	// made with (conversation.SummaryOutput.Family).
	Family string
}

// Summarize implements conversation.Summarizer.
func (s *Echo) Summarize(ctx context.Context, in conversation.SummaryInput) (conversation.SummaryOutput, error) {
	s.mu.Lock()
	s.Calls++
	err := s.Err
	s.mu.Unlock()
	if err != nil {
		return conversation.SummaryOutput{Usage: conversation.Usage{Tokens: conversation.Tokens{Calls: 1, InputTokens: 10}}}, err
	}
	lines := []string{}
	if in.Previous != "" {
		lines = append(lines, in.Previous)
	}
	for _, t := range in.Turns {
		if len(t.Messages) > 0 {
			lines = append(lines, "- "+t.Messages[0].Text())
		}
	}
	return conversation.SummaryOutput{Text: strings.Join(lines, "\n"), Family: s.Family, Usage: conversation.Usage{Tokens: conversation.Tokens{Calls: 1, InputTokens: 100, OutputTokens: 20}}}, nil
}

func (e *env) summary(phone string) conversation.RunningSummary {
	e.t.Helper()
	s, err := e.mem.LoadSummary(ctx(), phone)
	if err != nil {
		e.t.Fatalf("LoadSummary: %v", err)
	}
	return s
}

// testSummariesCap: the turns the cap drops wait, pending, for the
// summary of a person who keeps one; the history is capped as before; a
// person who keeps none gets no summary record.
func testSummariesCap(t *testing.T, e *env) {
	for i := range conversation.DefaultMaxTurns + 2 {
		e.save(erin, TextTurn(fmt.Sprintf("erin %d", i), "ok")...)
		e.save(jason, TextTurn(fmt.Sprintf("jason %d", i), "ok")...)
		e.clock.Advance(time.Second)
	}
	if got := len(e.history(erin)); got != 2*conversation.DefaultMaxTurns {
		t.Errorf("Erin's history has %d messages, want the cap's %d", got, 2*conversation.DefaultMaxTurns)
	}
	if s := e.summary(erin); s.Pending != 2 || s.Text != "" {
		t.Errorf("Erin's summary = %+v, want the 2 dropped turns pending and no text yet", s)
	}
	if s := e.summary(jason); s.Pending != 0 {
		t.Errorf("Jason keeps no summary, yet %d turns are pending", s.Pending)
	}
	if _, err := e.store.Get(ctx(), conversation.Summaries, jason); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("a summary record for someone who keeps none: %v", err)
	}
	// Saving the same turns again (another process's retry) adds none.
	s, _ := e.mem.FoldSummary(ctx(), erin, &Echo{})
	if s.Turns != 2 || !strings.Contains(s.Text, "erin 0") || !strings.Contains(s.Text, "erin 1") || strings.Contains(s.Text, "erin 2") {
		t.Errorf("folded summary = %+v, want turns 0 and 1", s)
	}
}

// testSummariesExpiry: an expired conversation's turns move to pending
// when the next access expires it, and Expire does it without a message.
func testSummariesExpiry(t *testing.T, e *env) {
	e.save(erin, TextTurn("we decided on pizza sunday", "Great")...)
	e.save(erin, TextTurn("and a movie", "Fun")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	if h := e.history(erin); len(h) != 0 {
		t.Fatalf("expired history = %s", dump(h))
	}
	if s := e.summary(erin); s.Pending != 2 {
		t.Errorf("after expiry %d turns are pending, want 2", s.Pending)
	}
	e.save(erin, TextTurn("new session", "hi")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	if ok, err := e.mem.Expire(ctx(), erin); !ok || err != nil {
		t.Fatalf("Expire = %v, %v", ok, err)
	}
	if s := e.summary(erin); s.Pending != 3 {
		t.Errorf("after Expire %d turns are pending, want 3", s.Pending)
	}
	if ok, _ := e.mem.Expire(ctx(), erin); ok {
		t.Error("Expire of a conversation that is gone reported one")
	}
}

// testSummariesSweep: the sweep moves the turns of expired conversations
// to pending before it deletes them, and FoldAll folds every person's.
func testSummariesSweep(t *testing.T, e *env) {
	e.save(erin, TextTurn("soccer moved to 9am", "Noted")...)
	e.save(jason, TextTurn("jason's words", "ok")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	if n, err := e.mem.Sweep(ctx()); err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2 deleted", n, err)
	}
	echo := &Echo{}
	if n, err := e.mem.FoldAll(ctx(), echo); n != 1 || err != nil {
		t.Fatalf("FoldAll = %d, %v; want Erin's summary made", n, err)
	}
	if s := e.summary(erin); !strings.Contains(s.Text, "soccer moved to 9am") || s.Pending != 0 {
		t.Errorf("after the sweep Erin's summary = %+v", s)
	}
	if n, _ := e.mem.FoldAll(ctx(), echo); n != 0 || echo.Calls != 1 {
		t.Errorf("a second FoldAll made %d summaries (%d calls), want none", n, echo.Calls)
	}
}

// testSummariesFold: a fold makes the summary from the previous one and
// the pending turns, which go; its usage is in the ledger; with nothing
// pending the summarizer is not called.
func testSummariesFold(t *testing.T, e *env) {
	e.save(erin, TextTurn("first", "ok")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.history(erin)
	echo := &Echo{}
	s, err := e.mem.FoldSummary(ctx(), erin, echo)
	if err != nil || s.Text != "- first" || s.Pending != 0 || s.Turns != 1 || !s.Made.Equal(e.clock.Now()) {
		t.Fatalf("FoldSummary = %+v, %v", s, err)
	}
	e.save(erin, TextTurn("second", "ok")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.history(erin)
	if s, _ = e.mem.FoldSummary(ctx(), erin, echo); s.Text != "- first\n- second" || s.Turns != 2 {
		t.Errorf("second fold = %+v, want the first summary and the new turn", s)
	}
	if _, err := e.mem.FoldSummary(ctx(), erin, echo); err != nil || echo.Calls != 2 {
		t.Errorf("a fold with nothing pending called the summarizer (%d calls), %v", echo.Calls, err)
	}
	days, err := e.mem.UsageSince(ctx(), time.Time{})
	if err != nil || len(days) != 1 || days[0].Usage.OutputTokens != 40 || days[0].Usage.Calls != 2 {
		t.Errorf("the ledger after two folds = %+v, %v; want 2 calls and 40 output tokens", days, err)
	}
	e.reopen(nil)
	if got := e.summary(erin); got.Text != s.Text {
		t.Errorf("after reopening the summary is %q", got.Text)
	}
}

// testSummariesFoldFailure: a summarizer that fails leaves the turns
// pending for the next fold.
func testSummariesFoldFailure(t *testing.T, e *env) {
	e.save(erin, TextTurn("keep me", "ok")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.history(erin)
	echo := &Echo{Err: errors.New("overloaded")}
	if _, err := e.mem.FoldSummary(ctx(), erin, echo); err == nil {
		t.Fatal("a failed fold returned no error")
	}
	if s := e.summary(erin); s.Pending != 1 {
		t.Fatalf("after a failed fold %d turns are pending, want 1", s.Pending)
	}
	echo.Err = nil
	if s, err := e.mem.FoldSummary(ctx(), erin, echo); err != nil || s.Text != "- keep me" {
		t.Errorf("the retry made %+v, %v", s, err)
	}
}

// testSummariesConcurrent: folds and saves at once lose no turn and fold
// none twice.
func testSummariesConcurrent(t *testing.T, e *env) {
	const n = 8
	for i := range n {
		e.save(erin, TextTurn(fmt.Sprintf("turn %d", i), "ok")...)
		e.clock.Advance(conversation.DefaultTimeout + time.Second)
	}
	e.history(erin)
	var wg sync.WaitGroup
	echo := &Echo{}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.mem.FoldSummary(ctx(), erin, echo); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	s := e.summary(erin)
	if s.Pending != 0 || s.Turns != n {
		t.Fatalf("after concurrent folds: %+v; want %d turns folded, none pending", s, n)
	}
	for i := range n {
		if c := strings.Count(s.Text+"\n", fmt.Sprintf("- turn %d\n", i)); c != 1 {
			t.Errorf("turn %d is %d times in the summary %q, want once", i, c, s.Text)
		}
	}
}

// testSummariesForget: forgetting a note drops the summary made from the
// turn that wrote it, in its record and in the session that shows it, and
// forgets the pending turns holding its text; no record of any kind keeps
// it.
func testSummariesForget(t *testing.T, e *env) {
	fam := family()
	const secret = "Emma is allergic to peanuts"
	n, _, err := e.mem.AddNote(ctx(), fam, erin, conversation.NewNote{Text: secret, Scope: "family", ToolUseID: "toolu_sum1"})
	if err != nil {
		t.Fatal(err)
	}
	e.save(erin, rememberTurn("remember: "+secret, "toolu_sum1", secret)...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.history(erin)
	if s, _ := e.mem.FoldSummary(ctx(), erin, &Echo{}); !strings.Contains(s.Text, secret) {
		t.Fatalf("the echo summary %q should hold the note's text", s.Text)
	}
	e.save(erin, TextTurn("again: "+secret, "ok")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.history(erin)
	s := e.summary(erin)
	if s.Pending != 1 {
		t.Fatalf("want one pending turn, got %+v", s)
	}
	// A session under way shows the summary.
	shown, err := e.mem.ShowNotes(ctx(), fam, erin)
	if err != nil {
		t.Fatal(err)
	}
	shown.Summary = s.Text
	if err := e.mem.SaveShown(ctx(), erin, conversation.Turn{Messages: TextTurn("hi", "hello")}, shown); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mem.ForgetNote(ctx(), fam, erin, n.ID); err != nil {
		t.Fatal(err)
	}
	for _, kind := range conversation.Kinds {
		recs, _ := e.store.List(ctx(), kind, "")
		for _, r := range recs {
			if bytes.Contains(bytes.ToLower(r.Data), []byte("allergic to peanuts")) {
				t.Errorf("after forget, %s %q still holds the text: %s", kind, r.Key, r.Data)
			}
		}
	}
	if s := e.summary(erin); s.Text != "" || s.Pending != 1 {
		t.Errorf("after forget the summary is %+v, want no text and the forgotten turn pending", s)
	}
	if c, _ := e.mem.Current(ctx(), erin); len(c.Turns) != 1 {
		t.Errorf("the session under way lost its turn: %d turns", len(c.Turns))
	} else if got, _ := c.Shown(); got.Summary != "" {
		t.Errorf("the session still shows the summary %q", got.Summary)
	}
}

// testSummariesDropReplaced: a summarizer that restates a replaced note,
// from the turn that wrote it, does not bring its text back: the line is
// dropped before the summary is stored, so no stored summary holds it.
func testSummariesDropReplaced(t *testing.T, e *env) {
	fam := family()
	const old = "Emma is allergic to tree nuts"
	if _, _, err := e.mem.AddNote(ctx(), fam, erin, conversation.NewNote{Text: old, Scope: "family", ToolUseID: "toolu_sumr1"}); err != nil {
		t.Fatal(err)
	}
	e.save(erin, rememberTurn("remember: "+old, "toolu_sumr1", old)...)
	if _, _, err := e.mem.AddNote(ctx(), fam, erin, conversation.NewNote{Text: "Emma is allergic to peanuts", Scope: "family", Replaces: 1}); err != nil {
		t.Fatal(err)
	}
	e.save(erin, TextTurn("pizza on sunday", "ok")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.history(erin)
	s, err := e.mem.FoldSummary(ctx(), erin, &Echo{Family: fam.ID})
	if err != nil {
		t.Fatal(err)
	}
	if s.Text != "- pizza on sunday" {
		t.Errorf("the summary is %q, want the pizza line alone", s.Text)
	}
	for key, stored := range SummariesHolding(t, e.store, "tree nuts") {
		t.Errorf("the stored summary of %s holds the replaced note's text: %q", key, stored)
	}
}

// SummariesHolding returns the text of each summary in store whose text
// holds text, ignoring case, by key: read from the records, as the store
// keeps them.
func SummariesHolding(tb testing.TB, store conversation.Store, text string) map[string]string {
	tb.Helper()
	recs, err := store.List(context.Background(), conversation.Summaries, "")
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range recs {
		var f struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(r.Data, &f); err != nil {
			tb.Fatalf("the stored summary of %s: %v", r.Key, err)
		}
		if strings.Contains(strings.ToLower(f.Text), strings.ToLower(text)) {
			out[r.Key] = f.Text
		}
	}
	return out
}

// testSummariesKeep: the sweep deletes a summary not written for the
// summary keep, and keeps a younger one.
func testSummariesKeep(t *testing.T, e *env) {
	e.save(erin, TextTurn("old news", "ok")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.mem.Sweep(ctx())
	e.mem.FoldAll(ctx(), &Echo{})
	e.clock.Advance(conversation.DefaultSummaryKeep - time.Hour)
	e.mem.Sweep(ctx())
	if s := e.summary(erin); s.Text == "" {
		t.Fatal("the sweep deleted a summary younger than its keep")
	}
	e.clock.Advance(2 * time.Hour)
	e.mem.Sweep(ctx())
	if s := e.summary(erin); s.Text != "" || s.Pending != 0 {
		t.Errorf("a summary past its keep is still there: %+v", s)
	}
}

// testSummariesErase: erasing a person deletes their summary, pending
// turns and all.
func testSummariesErase(t *testing.T, e *env) {
	e.save(erin, TextTurn("private stuff", "ok")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.history(erin)
	e.mem.FoldSummary(ctx(), erin, &Echo{})
	e.save(erin, TextTurn("more", "ok")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.history(erin)
	erased, err := e.mem.Erase(ctx(), erin)
	if err != nil || erased[conversation.Summaries] != 1 {
		t.Fatalf("Erase = %v, %v; want the summary counted", erased, err)
	}
	if _, err := e.store.Get(ctx(), conversation.Summaries, erin); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("after Erase the summary is still stored: %v", err)
	}
}
