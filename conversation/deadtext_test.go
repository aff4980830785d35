package conversation_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/conversation/storetest"
)

// summarizeFunc is a Summarizer made of a function.
type summarizeFunc func(ctx context.Context, in conversation.SummaryInput) (conversation.SummaryOutput, error)

func (f summarizeFunc) Summarize(ctx context.Context, in conversation.SummaryInput) (conversation.SummaryOutput, error) {
	return f(ctx, in)
}

// hookStore runs before once, ahead of the first Put of a record of kind
// under key ("" for any key).
type hookStore struct {
	conversation.Store
	kind   conversation.Kind
	key    string
	before func()
}

func (s *hookStore) Put(ctx context.Context, kind conversation.Kind, rec conversation.Record, keep time.Duration) (int64, error) {
	if kind == s.kind && (s.key == "" || rec.Key == s.key) && s.before != nil {
		before := s.before
		s.before = nil
		before()
	}
	return s.Store.Put(ctx, kind, rec, keep)
}

// failGets fails every Get of a record of kind once fail is set; with
// failAfterSave, fail is set by the first conversation written.
type failGets struct {
	conversation.Store
	kind                conversation.Kind
	failAfterSave, fail bool
}

func (s *failGets) Put(ctx context.Context, kind conversation.Kind, rec conversation.Record, keep time.Duration) (int64, error) {
	v, err := s.Store.Put(ctx, kind, rec, keep)
	if err == nil && kind == conversation.Conversations && s.failAfterSave {
		s.fail = true
	}
	return v, err
}

func (s *failGets) Get(ctx context.Context, kind conversation.Kind, key string) (conversation.Record, error) {
	if s.fail && kind == s.kind {
		return conversation.Record{}, errors.New("store down")
	}
	return s.Store.Get(ctx, kind, key)
}

const (
	deadErin  = "+14155551234"
	deadJason = "+14155555678"
)

var deadFamily = conversation.Family{ID: "smiths", Members: map[string]string{deadErin: "Erin", deadJason: "Jason"}}

// deadEnv is a memory whose family's members keep summaries, with Erin's
// note #1 written by a turn of hers now pending.
func deadEnv(t *testing.T, store conversation.Store) (*conversation.Memory, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock(storetest.Start)
	mem, err := conversation.New(store, &conversation.Options{Now: clock.Now, Summarize: func(p string) bool {
		_, ok := deadFamily.Members[p]
		return ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	turn := []conversation.Message{
		conversation.UserText("remember: Emma is allergic to tree nuts"),
		conversation.NewMessage(conversation.RoleAssistant, json.RawMessage(`{"type":"tool_use","id":"toolu_dead1","name":"remember","input":{"text":"Emma is allergic to tree nuts","scope":"family"}}`)),
		conversation.NewMessage(conversation.RoleUser, json.RawMessage(`{"type":"tool_result","tool_use_id":"toolu_dead1","content":"Noted as #1 (family)."}`)),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Noted as #1.")),
	}
	if err := mem.SaveTurn(ctx, deadErin, turn); err != nil {
		t.Fatal(err)
	}
	if _, _, err := mem.AddNote(ctx, deadFamily, deadErin, conversation.NewNote{Text: "Emma is allergic to tree nuts", Scope: "family", ToolUseID: "toolu_dead1"}); err != nil {
		t.Fatal(err)
	}
	if err := mem.SaveTurn(ctx, deadErin, storetest.TextTurn("pizza on Sunday at 6", "Pizza it is.")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(conversation.DefaultTimeout + time.Second)
	if ok, err := mem.Expire(ctx, deadErin); !ok || err != nil {
		t.Fatalf("Expire = %v, %v", ok, err)
	}
	return mem, clock
}

// echoNotes is a summarizer that ignores its instructions: it writes
// every note it is shown and every line in echo into the summary. During
// the call it runs during, if set.
func echoNotes(mem *conversation.Memory, echo []string, during func()) conversation.Summarizer {
	return summarizeFunc(func(ctx context.Context, in conversation.SummaryInput) (conversation.SummaryOutput, error) {
		notes, err := mem.Notes(ctx, deadFamily, in.Phone)
		if err != nil {
			return conversation.SummaryOutput{}, err
		}
		out := conversation.SummaryOutput{Family: deadFamily.ID}
		var lines []string
		for _, n := range notes {
			out.NoteIDs = append(out.NoteIDs, n.ID)
			out.Notes = append(out.Notes, conversation.ShownNote{ID: n.ID, Scope: n.Scope, Text: n.Text})
			lines = append(lines, "- "+n.Text)
		}
		for _, l := range echo {
			lines = append(lines, "- "+l)
		}
		if during != nil {
			during()
		}
		out.Text = strings.Join(lines, "\n")
		return out, nil
	})
}

// assertNoDeadText fails t if Erin's summary, or any stored summary's
// bytes, hold text.
func assertNoDeadText(t *testing.T, mem *conversation.Memory, store conversation.Store, text, keep string) {
	t.Helper()
	s, err := mem.LoadSummary(t.Context(), deadErin)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(s.Text), strings.ToLower(text)) || !strings.Contains(s.Text, keep) {
		t.Errorf("the summary is %q: want %q in it and no %q", s.Text, keep, text)
	}
	for key, stored := range storetest.SummariesHolding(t, store, text) {
		t.Errorf("the stored summary of %s holds %q: %s", key, text, stored)
	}
}

// TestSummaryDropsReplacedNote: a summarizer that restates a replaced
// note, whose text it found in the turn that wrote it, does not bring it
// back: the line goes before the summary is stored.
func TestSummaryDropsReplacedNote(t *testing.T) {
	store := memstore.New()
	mem, _ := deadEnv(t, store)
	ctx := t.Context()
	if _, _, err := mem.AddNote(ctx, deadFamily, deadErin, conversation.NewNote{Text: "Emma is allergic to peanuts", Scope: "family", Replaces: 1}); err != nil {
		t.Fatal(err)
	}
	sum := echoNotes(mem, []string{"Emma is allergic to tree nuts (said on Monday)", "Pizza on Sunday at 6"}, nil)
	if _, err := mem.FoldSummary(ctx, deadErin, sum); err != nil {
		t.Fatal(err)
	}
	assertNoDeadText(t, mem, store, "tree nuts", "Pizza on Sunday at 6")
}

// TestSummaryDropsNoteForgottenMeanwhile: a note forgotten while the
// summarizer writes, which it was shown and restates, is not in the
// summary stored.
func TestSummaryDropsNoteForgottenMeanwhile(t *testing.T) {
	store := memstore.New()
	mem, _ := deadEnv(t, store)
	ctx := t.Context()
	sum := echoNotes(mem, []string{"Pizza on Sunday at 6"}, func() {
		if _, err := mem.ForgetNote(ctx, deadFamily, deadJason, 1); err != nil {
			t.Error(err)
		}
	})
	if _, err := mem.FoldSummary(ctx, deadErin, sum); err != nil {
		t.Fatal(err)
	}
	assertNoDeadText(t, mem, store, "tree nuts", "Pizza on Sunday at 6")
}

// TestSummaryDropsNoteReplacedAtTheWrite: a note replaced between the
// fold's check and its write (the replacement finds no summary to clean
// yet) is taken out of the summary just written.
func TestSummaryDropsNoteReplacedAtTheWrite(t *testing.T) {
	store := &hookStore{Store: memstore.New(), kind: conversation.Summaries}
	mem, _ := deadEnv(t, store)
	ctx := t.Context()
	store.before = func() {
		if _, _, err := mem.AddNote(ctx, deadFamily, deadJason, conversation.NewNote{Text: "Emma is allergic to peanuts", Scope: "family", Replaces: 1}); err != nil {
			t.Error(err)
		}
	}
	sum := echoNotes(mem, []string{"Pizza on Sunday at 6"}, nil)
	s, err := mem.FoldSummary(ctx, deadErin, sum)
	if err != nil {
		t.Fatal(err)
	}
	if store.before != nil {
		t.Fatal("the replacement did not run at the summary's write")
	}
	if strings.Contains(s.Text, "tree nuts") {
		t.Errorf("FoldSummary returned %q, holding the replaced note", s.Text)
	}
	assertNoDeadText(t, mem, store, "tree nuts", "Pizza on Sunday at 6")
}

// TestReplaceDropsNoteFromSummaries: replacing a note takes its text out
// of the summaries made before, so that the next fold does not carry it
// on.
func TestReplaceDropsNoteFromSummaries(t *testing.T) {
	store := memstore.New()
	mem, _ := deadEnv(t, store)
	ctx := t.Context()
	if _, err := mem.FoldSummary(ctx, deadErin, echoNotes(mem, []string{"Pizza on Sunday at 6"}, nil)); err != nil {
		t.Fatal(err)
	}
	if s, _ := mem.LoadSummary(ctx, deadErin); !strings.Contains(s.Text, "tree nuts") {
		t.Fatalf("the live note's text should be in this summary: %q", s.Text)
	}
	if _, _, err := mem.AddNote(ctx, deadFamily, deadJason, conversation.NewNote{Text: "Emma is allergic to peanuts", Scope: "family", Replaces: 1}); err != nil {
		t.Fatal(err)
	}
	assertNoDeadText(t, mem, store, "tree nuts", "Pizza on Sunday at 6")
}

// TestReplaceDropsNoteFromSummariesOff: a summary stored while summaries
// were on loses a replaced note's text too when the Memory that replaces
// the note keeps no summaries (summaries turned off since, or another
// process's configuration).
func TestReplaceDropsNoteFromSummariesOff(t *testing.T) {
	store := memstore.New()
	mem, clock := deadEnv(t, store)
	ctx := t.Context()
	if _, err := mem.FoldSummary(ctx, deadErin, echoNotes(mem, []string{"Pizza on Sunday at 6"}, nil)); err != nil {
		t.Fatal(err)
	}
	off, err := conversation.New(store, &conversation.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := off.AddNote(ctx, deadFamily, deadJason, conversation.NewNote{Text: "Emma is allergic to peanuts", Scope: "family", Replaces: 1}); err != nil {
		t.Fatal(err)
	}
	assertNoDeadText(t, mem, store, "tree nuts", "Pizza on Sunday at 6")
}

// TestReplaceWrittenDespiteSummaries: a correction whose clean-up of the
// summaries fails is written all the same, and AddNote says so: nothing is
// written on error, so an error would tell the person it was not.
func TestReplaceWrittenDespiteSummaries(t *testing.T) {
	store := &failGets{Store: memstore.New(), kind: conversation.Summaries}
	mem, _ := deadEnv(t, store)
	ctx := t.Context()
	store.fail = true
	n, added, err := mem.AddNote(ctx, deadFamily, deadJason, conversation.NewNote{Text: "Emma is allergic to peanuts", Scope: "family", Replaces: 1})
	if err != nil || !added || n.Replaces != 1 {
		t.Fatalf("AddNote = %+v, %v, %v; want the correction written", n, added, err)
	}
	notes, err := mem.Notes(ctx, deadFamily, deadErin)
	if err != nil || len(notes) != 1 || notes[0].ID != n.ID {
		t.Errorf("notes after the correction: %+v, %v; want #%d alone", notes, err, n.ID)
	}
}
