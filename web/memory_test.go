package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/web"
)

// notesFixture is a page whose family keeps notes: a family note by
// Jason, a private one by Erin and one by Jason.
func notesFixture(t *testing.T) (*fixture, conversation.Family, []conversation.Note) {
	t.Helper()
	fam := conversation.Family{ID: conversation.DefaultFamilyID, Claim: true,
		Members: map[string]string{erinPhone: "Erin", jasonPhone: "Jason"}}
	f := newFixture(t, func(o *web.Options) { o.Notes = fam })
	var notes []conversation.Note
	for _, n := range []struct {
		by string
		conversation.NewNote
	}{
		{jasonPhone, conversation.NewNote{Scope: conversation.ScopeFamily, Text: "The gate code is <b>4711</b>"}},
		{erinPhone, conversation.NewNote{Scope: conversation.ScopePrivate, Text: "Erin's surprise party on Friday"}},
		{jasonPhone, conversation.NewNote{Scope: conversation.ScopePrivate, Text: "Jason's secret recipe"}},
	} {
		note, _, err := f.mem.AddNote(context.Background(), fam, n.by, n.NewNote)
		if err != nil {
			t.Fatal(err)
		}
		notes = append(notes, note)
	}
	return f, fam, notes
}

// TestNotesShown: a person's page lists the notes they see, escaped, each
// with its forget form, and not another person's private note.
func TestNotesShown(t *testing.T) {
	f, _, _ := notesFixture(t)
	page := f.browser().get("/people/erin")
	for _, want := range []string{
		"#1", "family", "The gate code is &lt;b&gt;4711&lt;/b&gt;", "by Jason",
		"#2", "private", "Erin&#39;s surprise party on Friday", "by Erin",
		`action="/people/erin/notes/1/forget"`, `action="/people/erin/notes/2/forget"`,
	} {
		if !strings.Contains(page.body, want) {
			t.Errorf("Erin's page lacks %q:\n%s", want, page.body)
		}
	}
	for _, not := range []string{"<b>4711", "Jason&#39;s secret recipe", "/notes/3/forget"} {
		if strings.Contains(page.body, not) {
			t.Errorf("Erin's page shows %q:\n%s", not, page.body)
		}
	}
	if page := f.browser().get("/people/jason"); !strings.Contains(page.body, "Jason&#39;s secret recipe") || strings.Contains(page.body, "surprise party") {
		t.Errorf("Jason's page does not show his notes alone:\n%s", page.body)
	}
}

// TestForgetNote: the forget form needs the CSRF token; with it the note
// is forgotten as mombot memory forget does, its text gone from the
// conversations too; a note the person does not see is not found.
func TestForgetNote(t *testing.T) {
	f, fam, _ := notesFixture(t)
	ctx := context.Background()
	if err := f.mem.SaveTurn(ctx, jasonPhone, storetest.TextTurn("The gate code is <b>4711</b>", "Noted.")); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	if r := b.post("/people/erin/notes/1/forget", nil); r.status != http.StatusForbidden {
		t.Errorf("forget without csrf: status %d, want 403", r.status)
	}
	if notes, err := f.mem.Notes(ctx, fam, erinPhone); err != nil || len(notes) != 2 {
		t.Fatalf("after a refused forget Erin sees %d notes, %v; want 2", len(notes), err)
	}
	csrf := b.csrf("/people/erin")
	if r := b.post("/people/erin/notes/3/forget", url.Values{"csrf": {csrf}}); r.status != http.StatusNotFound {
		t.Errorf("Erin forgetting Jason's private note: status %d, want 404", r.status)
	}
	r := b.post("/people/erin/notes/1/forget", url.Values{"csrf": {csrf}})
	if r.status != http.StatusSeeOther || r.location != "/people/erin" {
		t.Fatalf("forget: status %d, location %q", r.status, r.location)
	}
	notes, err := f.mem.Notes(ctx, fam, erinPhone)
	if err != nil || len(notes) != 1 || notes[0].ID != 2 {
		t.Errorf("after forgetting #1 Erin sees %+v, %v; want #2 alone", notes, err)
	}
	if c, err := f.mem.Current(ctx, jasonPhone); err != nil || len(c.Turns) != 1 || strings.Contains(c.Turns[0].Messages[0].Text(), "4711") {
		t.Errorf("Jason's conversation after the forget: %+v, %v; want the note's text gone", c.Turns, err)
	}
	if page := b.get("/people/erin"); strings.Contains(page.body, "4711") {
		t.Errorf("Erin's page after the forget:\n%s", page.body)
	}
	if r := b.post("/people/erin/notes/1/forget", url.Values{"csrf": {csrf}}); r.status != http.StatusNotFound {
		t.Errorf("forgetting #1 twice: status %d, want 404", r.status)
	}
}

// TestNotesOff: without a notes family the page shows no notes and
// refuses to forget one.
func TestNotesOff(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	if page := b.get("/people/erin"); strings.Contains(page.body, "Notes Erin sees") {
		t.Errorf("notes shown without a notes family:\n%s", page.body)
	}
	if r := b.post("/people/erin/notes/1/forget", url.Values{"csrf": {b.csrf("/people/erin")}}); r.status != http.StatusNotFound {
		t.Errorf("forget without a notes family: status %d, want 404", r.status)
	}
}

// TestDeleteSummary: the summary shows escaped with its delete form,
// which needs the CSRF token and removes it.
func TestDeleteSummary(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	data := `{"text":"Erin plays <i>chess</i> on Tuesdays","made":"2026-11-20T10:00:00Z","updated":"2026-11-20T10:00:00Z"}`
	if _, err := f.store.Put(ctx, conversation.Summaries, conversation.Record{Key: erinPhone, Data: []byte(data)}, 0); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	page := b.get("/people/erin")
	for _, want := range []string{"Erin plays &lt;i&gt;chess&lt;/i&gt; on Tuesdays", `action="/people/erin/summary/delete"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("Erin's page lacks %q:\n%s", want, page.body)
		}
	}
	if r := b.post("/people/erin/summary/delete", nil); r.status != http.StatusForbidden {
		t.Errorf("delete without csrf: status %d, want 403", r.status)
	}
	if s, err := f.mem.LoadSummary(ctx, erinPhone); err != nil || s.Text == "" {
		t.Fatalf("after a refused delete the summary is %+v, %v", s, err)
	}
	r := b.post("/people/erin/summary/delete", url.Values{"csrf": {b.csrf("/people/erin")}})
	if r.status != http.StatusSeeOther || r.location != "/people/erin" {
		t.Fatalf("delete: status %d, location %q", r.status, r.location)
	}
	if s, err := f.mem.LoadSummary(ctx, erinPhone); err != nil || s.Text != "" {
		t.Errorf("after deleting, the summary is %+v, %v", s, err)
	}
	if page := b.get("/people/erin"); strings.Contains(page.body, "chess") || !strings.Contains(page.body, "No summary") {
		t.Errorf("Erin's page after deleting the summary:\n%s", page.body)
	}
}
