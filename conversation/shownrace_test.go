package conversation_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/conversation/storetest"
)

// raceNote is the note Jason forgets while Erin starts a session.
const raceNote = "Emma is allergic to tree nuts"

// startSession starts Erin's session as the assistant does: it takes the
// notes she is shown, folds her pending turns into her summary (the
// summarizer restates the notes it is shown), and saves the session's
// first turn, its reply restating the note if it was shown, with them.
func startSession(t *testing.T, mem *conversation.Memory) error {
	t.Helper()
	ctx := t.Context()
	shown, err := mem.ShowNotes(ctx, deadFamily, deadErin)
	if err != nil {
		return err
	}
	s, err := mem.FoldSummary(ctx, deadErin, echoNotes(mem, []string{"Pizza on Sunday at 6"}, nil))
	if err != nil {
		return err
	}
	shown.Summary = s.Text
	reply := "No note about Emma." // the model is shown no note
	if len(shown.Notes) > 0 {
		reply = "Noted: " + raceNote + "."
	}
	return mem.SaveShown(ctx, deadErin, conversation.Turn{Messages: storetest.TextTurn("what is Emma allergic to?", reply)}, shown)
}

// assertForgottenInSession fails t if Erin's stored session shows note
// #1 or holds its text anywhere, or, with pizza set, if its summary lost
// more than the note's line.
func assertForgottenInSession(t *testing.T, mem *conversation.Memory, store conversation.Store, pizza bool) {
	t.Helper()
	c, err := mem.Load(t.Context(), deadErin)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := c.Shown()
	if !ok {
		t.Fatal("Erin's session stores no memory shown")
	}
	if len(s.Notes) != 0 || strings.Contains(s.Summary, raceNote) || (pizza && !strings.Contains(s.Summary, "Pizza")) {
		t.Errorf("Erin's session shows %+v after Jason forgot #1", s)
	}
	rec, err := store.Get(t.Context(), conversation.Conversations, deadErin)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(string(rec.Data)), "tree nuts") {
		t.Errorf("Erin's stored conversation holds the forgotten text:\n%s", rec.Data)
	}
}

// TestForgetAtSessionStart: Jason forgets a note after Erin's first
// message of a session took the notes and her summary and before it
// stored them with its turn; the forget finds no session of Erin's to
// clean, yet the stored session neither shows the note nor holds its
// text, and keeps the rest of the summary.
func TestForgetAtSessionStart(t *testing.T) {
	store := &hookStore{Store: memstore.New(), kind: conversation.Conversations, key: deadErin}
	mem, _ := deadEnv(t, store)
	ctx := t.Context()
	store.before = func() {
		if _, err := mem.ForgetNote(ctx, deadFamily, deadJason, 1); err != nil {
			t.Error(err)
		}
	}
	if err := startSession(t, mem); err != nil {
		t.Fatal(err)
	}
	if store.before != nil {
		t.Fatal("the forget did not run at the session's write")
	}
	assertForgottenInSession(t, mem, store, true)
}

// TestForgetRacesSessionStart: the forget and Erin's first message run
// at once, many times; whichever comes first, the stored session never
// shows the forgotten note.
func TestForgetRacesSessionStart(t *testing.T) {
	for range 30 {
		store := memstore.New()
		mem, _ := deadEnv(t, store)
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := mem.ForgetNote(t.Context(), deadFamily, deadJason, 1); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := startSession(t, mem); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		assertForgottenInSession(t, mem, store, false)
	}
}

// TestReplaceKeepsSessionShown: a note replaced during a session stays in
// the memory the session was shown, byte for byte, at its later turns'
// saves (the prompt cache serves those bytes); the next session shows the
// correction.
func TestReplaceKeepsSessionShown(t *testing.T) {
	store := memstore.New()
	mem, _ := deadEnv(t, store)
	ctx := t.Context()
	first, err := mem.ShowNotes(ctx, deadFamily, deadErin)
	if err != nil || len(first.Notes) != 1 {
		t.Fatalf("ShowNotes = %+v, %v; want note #1", first, err)
	}
	if err := mem.SaveShown(ctx, deadErin, conversation.Turn{Messages: storetest.TextTurn("hi", "hello")}, first); err != nil {
		t.Fatal(err)
	}
	if _, _, err := mem.AddNote(ctx, deadFamily, deadJason, conversation.NewNote{Text: "Emma is allergic to peanuts", Scope: "family", Replaces: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := mem.Load(ctx, deadErin)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := c.Shown()
	if err := mem.SaveShown(ctx, deadErin, conversation.Turn{Messages: storetest.TextTurn("and?", "ok")}, stored); err != nil {
		t.Fatal(err)
	}
	if c, err = mem.Load(ctx, deadErin); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Shown(); got.Render() != first.Render() {
		t.Errorf("after a replacement the session shows %q, want what it was shown, %q", got.Render(), first.Render())
	}
}

// TestSaveShownSavedDespiteRecheck: when the notes cannot be read again
// after the turn is saved, SaveShown still reports the turn saved, as it
// is: its caller would otherwise tell the person it was not.
func TestSaveShownSavedDespiteRecheck(t *testing.T) {
	store := &failGets{Store: memstore.New(), kind: conversation.Notes}
	mem, _ := deadEnv(t, store)
	ctx := t.Context()
	shown, err := mem.ShowNotes(ctx, deadFamily, deadErin)
	if err != nil {
		t.Fatal(err)
	}
	store.failAfterSave = true
	if err := mem.SaveShown(ctx, deadErin, conversation.Turn{Messages: storetest.TextTurn("hi", "hello")}, shown); err != nil {
		t.Errorf("SaveShown = %v; want nil, the turn saved", err)
	}
	if !store.fail {
		t.Fatal("the notes never failed after the save")
	}
	h, err := mem.History(ctx, deadErin)
	if err != nil || len(h) != 2 {
		t.Errorf("history after SaveShown: %d messages, %v; want the turn", len(h), err)
	}
}
