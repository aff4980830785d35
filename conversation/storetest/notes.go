package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// runNotes runs the cases of the family's notes ([conversation.Notes]):
// one record per family written through Memory's conditional update, so
// that every store keeps them, ids and limits included, without code of
// its own.
func runNotes(t *testing.T, newStorage NewStorage) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"NotesWhoSeesWhat", testNotesVisibility},
		{"NotesReplaceByID", testNotesReplace},
		{"NotesPrivateStaysHidden", testNotesHidden},
		{"NotesLimits", testNotesLimits},
		{"NotesFamiliesApart", testNotesFamilies},
		{"NotesPersistAcrossReopen", testNotesReopen},
		{"NotesConcurrentWriters", testNotesConcurrent},
		{"NotesSessionMemory", testNotesSession},
		{"NotesForgetLeavesNoText", testNotesForget},
		{"NotesErase", testNotesErase},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, newStorage)
			defer e.checkInvariants()
			tt.fn(t, e)
		})
	}
}

// A number outside the family of the notes cases (erin and jason).
const outsid = "+14155550199"

func family() conversation.Family {
	return conversation.Family{ID: conversation.DefaultFamilyID, Claim: true,
		Members: map[string]string{erin: "Erin", jason: "Jason"}}
}

func (e *env) note(fam conversation.Family, phone, scope, text string, replaces int) conversation.Note {
	e.t.Helper()
	n, added, err := e.mem.AddNote(ctx(), fam, phone, conversation.NewNote{Text: text, Scope: scope, Replaces: replaces})
	if err != nil || !added {
		e.t.Fatalf("AddNote(%s, %q) = %v, added %v", scope, text, err, added)
	}
	return n
}

func (e *env) seen(fam conversation.Family, phone string) string {
	e.t.Helper()
	notes, err := e.mem.Notes(ctx(), fam, phone)
	if err != nil {
		e.t.Fatalf("Notes(%s): %v", phone, err)
	}
	var parts []string
	for _, n := range notes {
		parts = append(parts, fmt.Sprintf("#%d %s %s", n.ID, n.Scope, n.Text))
	}
	return strings.Join(parts, "; ")
}

// testNotesVisibility: family notes are seen by every member, private ones
// by their author only; ids count up from 1; strangers and the system
// sender have no notes and cannot write any.
func testNotesVisibility(t *testing.T, e *env) {
	fam := family()
	n1 := e.note(fam, erin, conversation.ScopeFamily, "Emma is allergic to peanuts", 0)
	n2 := e.note(fam, erin, conversation.ScopePrivate, "Jason's birthday party is a surprise", 0)
	n3 := e.note(fam, jason, conversation.ScopePrivate, "Jason prefers aisle seats", 0)
	if n1.ID != 1 || n2.ID != 2 || n3.ID != 3 {
		t.Fatalf("ids = %d, %d, %d; want 1, 2, 3", n1.ID, n2.ID, n3.ID)
	}
	if n1.AuthorName != "Erin" || n1.Author != erin || n1.Created.IsZero() {
		t.Errorf("note #1 = %+v, want author Erin and a time", n1)
	}
	if got, want := e.seen(fam, erin), "#1 family Emma is allergic to peanuts; #2 private Jason's birthday party is a surprise"; got != want {
		t.Errorf("Erin sees %q, want %q", got, want)
	}
	if got, want := e.seen(fam, jason), "#1 family Emma is allergic to peanuts; #3 private Jason prefers aisle seats"; got != want {
		t.Errorf("Jason sees %q, want %q", got, want)
	}
	for _, p := range []string{outsid, conversation.SystemSender} {
		if _, err := e.mem.Notes(ctx(), fam, p); !errors.Is(err, conversation.ErrNotMember) {
			t.Errorf("Notes(%s) = %v, want ErrNotMember", p, err)
		}
		if _, _, err := e.mem.AddNote(ctx(), fam, p, conversation.NewNote{Text: "x", Scope: "family"}); !errors.Is(err, conversation.ErrNotMember) {
			t.Errorf("AddNote(%s) = %v, want ErrNotMember", p, err)
		}
		if _, err := e.mem.ForgetNote(ctx(), fam, p, 1); !errors.Is(err, conversation.ErrNotMember) {
			t.Errorf("ForgetNote(%s) = %v, want ErrNotMember", p, err)
		}
	}
	// The same fact again is not a second note.
	again, added, err := e.mem.AddNote(ctx(), fam, jason, conversation.NewNote{Text: "emma is  allergic to peanuts", Scope: "family"})
	if err != nil || added || again.ID != 1 {
		t.Errorf("AddNote of a note already kept = #%d, added %v, %v; want #1, not added", again.ID, added, err)
	}
}

// testNotesReplace: a correction replaces the note it names by id, never
// by likeness; forgetting the correction does not bring the old one back.
func testNotesReplace(t *testing.T, e *env) {
	fam := family()
	e.note(fam, erin, "family", "No fish for Jason", 0)                   // #1
	e.note(fam, erin, "family", "Emma is allergic to tree nuts", 0)       // #2
	fix := e.note(fam, jason, "family", "Emma is allergic to peanuts", 2) // #3
	if fix.ID != 3 || fix.Replaces != 2 {
		t.Fatalf("correction = %+v, want #3 replacing #2", fix)
	}
	e.note(fam, erin, "family", "No pork for Jason", 0) // #4: a note like #1 replaces nothing
	if got, want := e.seen(fam, erin), "#1 family No fish for Jason; #3 family Emma is allergic to peanuts; #4 family No pork for Jason"; got != want {
		t.Errorf("after the correction Erin sees %q, want %q", got, want)
	}
	if _, err := e.mem.ForgetNote(ctx(), fam, erin, 3); err != nil {
		t.Fatal(err)
	}
	if got, want := e.seen(fam, erin), "#1 family No fish for Jason; #4 family No pork for Jason"; got != want {
		t.Errorf("after forgetting the correction Erin sees %q, want %q (#2 stays gone)", got, want)
	}
	for _, id := range []int{2, 3, 99} {
		if _, _, err := e.mem.AddNote(ctx(), fam, erin, conversation.NewNote{Text: "x", Scope: "family", Replaces: id}); !errors.Is(err, conversation.ErrNoNote) {
			t.Errorf("replacing gone or unknown #%d = %v, want ErrNoNote", id, err)
		}
		if _, err := e.mem.ForgetNote(ctx(), fam, erin, id); !errors.Is(err, conversation.ErrNoNote) {
			t.Errorf("forgetting gone or unknown #%d = %v, want ErrNoNote", id, err)
		}
	}
	if n := e.note(fam, erin, "family", "next", 0); n.ID != 5 {
		t.Errorf("next id = %d, want 5 (ids are never reused)", n.ID)
	}
}

// testNotesHidden: another person's private note cannot be seen,
// replaced or forgotten, and the error is the one of an unknown id, so
// that its existence is not revealed.
func testNotesHidden(t *testing.T, e *env) {
	fam := family()
	e.note(fam, erin, "private", "the gift is in the garage", 0) // #1
	_, errHidden := e.mem.ForgetNote(ctx(), fam, jason, 1)
	_, errUnknown := e.mem.ForgetNote(ctx(), fam, jason, 2)
	if !errors.Is(errHidden, conversation.ErrNoNote) || strings.Replace(errHidden.Error(), "#1", "#2", 1) != errUnknown.Error() {
		t.Errorf("forgetting another's private note = %v; want ErrNoNote, worded as for an unknown id (%v)", errHidden, errUnknown)
	}
	_, _, errHidden = e.mem.AddNote(ctx(), fam, jason, conversation.NewNote{Text: "x", Scope: "family", Replaces: 1})
	_, _, errUnknown = e.mem.AddNote(ctx(), fam, jason, conversation.NewNote{Text: "x", Scope: "family", Replaces: 2})
	if !errors.Is(errHidden, conversation.ErrNoNote) || strings.Replace(errHidden.Error(), "#1", "#2", 1) != errUnknown.Error() {
		t.Errorf("replacing another's private note = %v; want ErrNoNote, worded as for an unknown id (%v)", errHidden, errUnknown)
	}
	if got, want := e.seen(fam, erin), "#1 private the gift is in the garage"; got != want {
		t.Errorf("Erin sees %q, want %q", got, want)
	}
}

// testNotesLimits: each limit refuses the note whole with an error the
// model can act on, and nothing changes.
func testNotesLimits(t *testing.T, e *env) {
	fam := family()
	for i := range conversation.MaxPrivateNotes {
		e.note(fam, jason, "private", fmt.Sprintf("p%d", i), 0)
	}
	_, _, err := e.mem.AddNote(ctx(), fam, jason, conversation.NewNote{Text: "one more", Scope: "private"})
	if !errors.Is(err, conversation.ErrNoteLimit) || !strings.Contains(err.Error(), "50 private notes") {
		t.Errorf("private note past the limit = %v, want ErrNoteLimit naming 50", err)
	}
	// Replacing one is not adding one.
	e.note(fam, jason, "private", "p0 corrected", 1)
	// Erin's private notes are her own count.
	e.note(fam, erin, "private", "mine", 0)
	for i := range conversation.MaxFamilyNotes {
		if _, _, err := e.mem.AddNote(ctx(), fam, erin, conversation.NewNote{Text: fmt.Sprintf("f%d", i), Scope: "family"}); err != nil {
			t.Fatalf("family note %d: %v", i, err)
		}
	}
	_, _, err = e.mem.AddNote(ctx(), fam, erin, conversation.NewNote{Text: "one more", Scope: "family"})
	if !errors.Is(err, conversation.ErrNoteLimit) || !strings.Contains(err.Error(), "100 notes") {
		t.Errorf("family note past the limit = %v, want ErrNoteLimit naming 100", err)
	}
	tests := []struct {
		text, scope string
		want        error
	}{
		{"   ", "family", conversation.ErrInvalidNote},
		{"x", "everyone", conversation.ErrInvalidNote},
		{strings.Repeat("é", conversation.MaxNoteText+1), "private", conversation.ErrNoteLimit},
	}
	for _, tt := range tests {
		if _, _, err := e.mem.AddNote(ctx(), fam, erin, conversation.NewNote{Text: tt.text, Scope: tt.scope}); !errors.Is(err, tt.want) {
			t.Errorf("AddNote(%.10q, %q) = %v, want %v", tt.text, tt.scope, err, tt.want)
		}
	}
	if n := strings.Count(e.seen(fam, erin), "#"); n != conversation.MaxFamilyNotes+1 {
		t.Errorf("Erin sees %d notes after the refusals, want %d", n, conversation.MaxFamilyNotes+1)
	}

	// The budget of what one person is shown.
	e2 := family()
	e2.ID = "budget"
	long := strings.Repeat("a", conversation.MaxNoteText-10)
	var refused error
	for i := 0; refused == nil && i < 100; i++ {
		_, _, refused = e.mem.AddNote(ctx(), e2, jason, conversation.NewNote{Text: fmt.Sprintf("%s %d", long, i), Scope: "family"})
	}
	if !errors.Is(refused, conversation.ErrNoteLimit) || !strings.Contains(refused.Error(), "1500") {
		t.Fatalf("notes past the budget = %v, want ErrNoteLimit naming 1500", refused)
	}
	shown, err := e.mem.ShowNotes(ctx(), e2, erin)
	if err != nil {
		t.Fatal(err)
	}
	if tok := conversation.MemoryTokens(shown.Render()); tok > conversation.MaxMemoryTokens || tok < conversation.MaxMemoryTokens-200 {
		t.Errorf("the memory shown at the budget takes %d tokens, want just under %d", tok, conversation.MaxMemoryTokens)
	}
}

// testNotesFamilies: two families in one store never see each other's
// notes; a family that keeps the default id claims it by its members, so
// that another such family is refused rather than shown it, and adding or
// removing a member keeps the notes.
func testNotesFamilies(t *testing.T, e *env) {
	ours := family()
	e.note(ours, erin, "family", "our secret recipe", 0)
	theirs := conversation.Family{ID: "smiths", Members: map[string]string{outsid: "Ann"}}
	if got := e.note(theirs, outsid, "family", "their note", 0); got.ID != 1 {
		t.Errorf("another family's first note is #%d, want #1", got.ID)
	}
	if got := e.seen(theirs, outsid); got != "#1 family their note" {
		t.Errorf("the other family sees %q", got)
	}
	other := conversation.Family{ID: conversation.DefaultFamilyID, Claim: true, Members: map[string]string{outsid: "Ann"}}
	if _, err := e.mem.Notes(ctx(), other, outsid); !errors.Is(err, conversation.ErrOtherFamily) {
		t.Errorf("another family on the default id: Notes = %v, want ErrOtherFamily", err)
	}
	if _, _, err := e.mem.AddNote(ctx(), other, outsid, conversation.NewNote{Text: "x", Scope: "family"}); !errors.Is(err, conversation.ErrOtherFamily) {
		t.Errorf("another family on the default id: AddNote = %v, want ErrOtherFamily", err)
	}
	// A new member joins, then Erin's number leaves: the notes stay.
	grown := family()
	grown.Members["+14155550103"] = "Emma"
	e.note(grown, "+14155550103", "private", "Emma's note", 0)
	shrunk := family()
	delete(shrunk.Members, erin)
	shrunk.Members["+14155550103"] = "Emma"
	if got := e.seen(shrunk, jason); got != "#1 family our secret recipe" {
		t.Errorf("after the members changed Jason sees %q", got)
	}
}

func testNotesReopen(t *testing.T, e *env) {
	fam := family()
	e.note(fam, erin, "family", "kept", 0)
	e.reopen(nil)
	if got := e.seen(fam, jason); got != "#1 family kept" {
		t.Errorf("after reopening Jason sees %q", got)
	}
	if n := e.note(fam, erin, "family", "second", 0); n.ID != 2 {
		t.Errorf("after reopening the next id is %d, want 2", n.ID)
	}
}

// testNotesConcurrent: writers in several store handles at once lose no
// note and never give one id twice.
func testNotesConcurrent(t *testing.T, e *env) {
	const writers, each = 4, 5
	fam := family()
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		s, err := e.open()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		mem, err := conversation.New(s, &e.opts)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				who := erin
				if w%2 == 1 {
					who = jason
				}
				if _, _, err := mem.AddNote(ctx(), fam, who, conversation.NewNote{Text: fmt.Sprintf("w%d n%d", w, i), Scope: "family"}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("AddNote: %v", err)
	}
	notes, err := e.mem.Notes(ctx(), fam, erin)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != writers*each {
		t.Fatalf("%d notes kept, want %d", len(notes), writers*each)
	}
	for i, n := range notes {
		if n.ID != i+1 {
			t.Fatalf("note %d has id %d, want ids 1 to %d, each once", i, n.ID, writers*each)
		}
	}
}

// rememberTurn is the turn in which a person had a note written.
func rememberTurn(user, toolID, text string) []conversation.Message {
	return []conversation.Message{
		conversation.UserText(user),
		msg("assistant", fmt.Sprintf(`[{"type":"tool_use","id":%q,"name":"remember","input":{"text":%q,"scope":"family"}}]`, toolID, text)),
		msg("user", fmt.Sprintf(`[{"type":"tool_result","tool_use_id":%q,"content":"Noted as #1."}]`, toolID)),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Noted as #1; say 'forget 1' to remove it.")),
	}
}

// testNotesSession: the memory shown at a session's start is stored with
// it and kept for the session, whatever later saves carry; a new session
// takes a new one.
func testNotesSession(t *testing.T, e *env) {
	fam := family()
	e.note(fam, erin, "family", "first", 0)
	shown, err := e.mem.ShowNotes(ctx(), fam, jason)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.mem.SaveShown(ctx(), jason, conversation.Turn{Messages: TextTurn("hi", "hello")}, shown); err != nil {
		t.Fatal(err)
	}
	e.note(fam, erin, "family", "second", 0)
	later, _ := e.mem.ShowNotes(ctx(), fam, jason)
	e.clock.Advance(time.Minute)
	if err := e.mem.SaveShown(ctx(), jason, conversation.Turn{Messages: TextTurn("and?", "yes")}, later); err != nil {
		t.Fatal(err)
	}
	c, err := e.mem.Current(ctx(), jason)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := c.Shown()
	if !ok || got.Render() != shown.Render() || !strings.Contains(got.Render(), "#1 (family) first") {
		t.Fatalf("the session shows %q, want what it started with, %q", got.Render(), shown.Render())
	}
	// A save without memory keeps it too.
	e.save(jason, TextTurn("more", "ok")...)
	if c, _ := e.mem.Current(ctx(), jason); c.Extra == nil {
		t.Fatal("a plain save dropped the session's memory")
	} else if s, _ := c.Shown(); s.Render() != shown.Render() {
		t.Fatalf("after a plain save the session shows %q", s.Render())
	}
	// A new session takes the new state.
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	if err := e.mem.SaveShown(ctx(), jason, conversation.Turn{Messages: TextTurn("back", "hi")}, later); err != nil {
		t.Fatal(err)
	}
	c, _ = e.mem.Current(ctx(), jason)
	if s, _ := c.Shown(); !strings.Contains(s.Render(), "#2 (family) second") {
		t.Errorf("a new session shows %q, want the second note too", s.Render())
	}
	// A new session saved without memory shows none of the old.
	e.clock.Advance(conversation.DefaultTimeout + time.Second)
	e.save(jason, TextTurn("again", "hi")...)
	if c, _ := e.mem.Current(ctx(), jason); len(c.Turns) != 1 {
		t.Fatalf("want a new session of one turn, got %d", len(c.Turns))
	} else if _, ok := c.Shown(); ok {
		t.Error("a new session saved without memory kept the old session's")
	}
}

// testNotesForget: forgetting a note leaves its text in no record of any
// kind: the notes keep a tombstone, the turn that wrote it is
// "[forgotten]" but valid, the session memory of every member lost it,
// the recent messages holding it are gone; the rest stays.
func testNotesForget(t *testing.T, e *env) {
	fam := family()
	const secret = "Emma is allergic to peanuts"
	e.save(erin, TextTurn("good morning", "Morning!")...)
	e.clock.Advance(time.Minute)
	turn := rememberTurn("remember: "+strings.ToLower(secret)+"!", "toolu_rem1", secret)
	n, _, err := e.mem.AddNote(ctx(), fam, erin, conversation.NewNote{Text: secret, Scope: "family", MessageID: "wamid.rem", ToolUseID: "toolu_rem1"})
	if err != nil {
		t.Fatal(err)
	}
	e.save(erin, turn...)
	keep := e.note(fam, erin, "family", "Soccer is on Saturdays", 0)
	shown, _ := e.mem.ShowNotes(ctx(), fam, jason)
	if err := e.mem.SaveShown(ctx(), jason, conversation.Turn{Messages: TextTurn("what's new?", "Emma is allergic to peanuts, noted.")}, shown); err != nil {
		t.Fatal(err)
	}
	err = e.mem.Remember(ctx(), erin,
		conversation.RecentMessage{ID: "wamid.rem", Role: "user", Text: "remember: emma is allergic to peanuts!", At: e.clock.Now()},
		conversation.RecentMessage{ID: "wamid.other", Role: "user", Text: "good morning", At: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}

	gone, err := e.mem.ForgetNote(ctx(), fam, jason, n.ID)
	if err != nil || gone.Text != secret {
		t.Fatalf("ForgetNote = %+v, %v", gone, err)
	}
	for _, kind := range conversation.Kinds {
		recs, err := e.store.List(ctx(), kind, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if bytes.Contains(bytes.ToLower(r.Data), bytes.ToLower([]byte("allergic to peanuts"))) {
				t.Errorf("after forget, %s %q still holds the text: %s", kind, r.Key, r.Data)
			}
		}
	}
	h := e.history(erin)
	if len(h) != 6 || !h[0].Equal(conversation.UserText("good morning")) || !strings.Contains(string(h[3].Content), "toolu_rem1") || h[2].Text() != conversation.Forgotten {
		t.Errorf("Erin's history after forget = %s; want the first turn kept and the second forgotten, its tool call kept", dump(h))
	}
	if err := conversation.ValidateTurn(h[2:]); err != nil {
		t.Errorf("the forgotten turn is no longer valid: %v", err)
	}
	c, _ := e.mem.Current(ctx(), jason)
	if s, _ := c.Shown(); strings.Contains(s.Render(), "#1") || !strings.Contains(s.Render(), fmt.Sprintf("#%d (family) Soccer", keep.ID)) {
		t.Errorf("Jason's session shows %q after the forget, want #%d only", s.Render(), keep.ID)
	}
	if _, err := e.mem.Recall(ctx(), erin, "wamid.other"); err != nil {
		t.Errorf("a recent message without the text was forgotten too: %v", err)
	}
	if _, err := e.mem.Recall(ctx(), erin, "wamid.rem"); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("the message that wrote the note is still recalled: %v", err)
	}
}

// testNotesErase: erasing a person turns every note they wrote into a
// tombstone and takes them out of the other sessions' memory; the others'
// notes stay.
func testNotesErase(t *testing.T, e *env) {
	fam := family()
	e.note(fam, erin, "family", "Erin's family note", 0)
	e.note(fam, erin, "private", "Erin's private note", 0)
	e.note(fam, jason, "family", "Jason's family note", 0)
	shown, _ := e.mem.ShowNotes(ctx(), fam, jason)
	if err := e.mem.SaveShown(ctx(), jason, conversation.Turn{Messages: TextTurn("hi", "hello")}, shown); err != nil {
		t.Fatal(err)
	}
	erased, err := e.mem.Erase(ctx(), erin)
	if err != nil {
		t.Fatal(err)
	}
	if erased[conversation.Notes] != 2 {
		t.Errorf("Erase counted %d notes, want 2", erased[conversation.Notes])
	}
	if got := e.seen(fam, jason); got != "#3 family Jason's family note" {
		t.Errorf("after Erase Jason sees %q", got)
	}
	recs, _ := e.store.List(ctx(), conversation.Notes, "")
	recs2, _ := e.store.List(ctx(), conversation.Conversations, "")
	for _, r := range append(recs, recs2...) {
		if bytes.Contains(r.Data, []byte("Erin's")) || bytes.Contains(r.Data, []byte(erin)) {
			t.Errorf("after Erase %q still holds Erin's notes or number: %s", r.Key, r.Data)
		}
	}
}
