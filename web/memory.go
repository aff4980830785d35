package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mombot/mombot/conversation"
)

// longTerm is what the person page shows of a person's long-term memory:
// the notes they see and their running summary.
type longTerm struct {
	// Notes says whether the page shows notes at all: there is a family
	// whose notes they are, and the person is one of its members.
	Notes bool
	List  []noteView
	// Summary is their running summary's text, "" for none; Made is when
	// it was made.
	Summary string
	Made    string
	Problem string // the long-term memory could not be read
}

// noteView is one note as the page shows it.
type noteView struct {
	ID      int
	Scope   string
	Text    string
	Author  string
	Created string
}

// hasNotes reports whether p has notes the page can show and forget.
func (s *Server) hasNotes(p *person) bool {
	_, member := s.o.Notes.Members[p.Key]
	return s.o.Notes.ID != "" && member && !p.Guest
}

// longTermOf reads p's notes and summary for the page; what cannot be read
// is logged and said in Problem.
func (s *Server) longTermOf(ctx context.Context, p *person) longTerm {
	lt := longTerm{Notes: s.hasNotes(p)}
	if lt.Notes {
		notes, err := s.o.Memory.Notes(ctx, s.o.Notes, p.Key)
		if err != nil {
			s.log.Error("web: reading the notes", "person", p.Name, "err", err)
			lt.Problem = "The notes could not be read just now; the log has the detail."
		}
		for _, n := range notes {
			lt.List = append(lt.List, noteView{ID: n.ID, Scope: n.Scope, Text: n.Text, Author: n.AuthorName,
				Created: n.Created.Local().Format("2 Jan 2006")})
		}
	}
	sum, err := s.o.Memory.LoadSummary(ctx, p.Key)
	if err != nil {
		s.log.Error("web: reading the summary", "person", p.Name, "err", err)
		lt.Problem = "The long-term memory could not be read just now; the log has the detail."
	}
	lt.Summary = sum.Text
	if !sum.Made.IsZero() {
		lt.Made = sum.Made.Local().Format("Mon 2 Jan 15:04")
	}
	return lt
}

// forgetNote forgets a note the person sees, as mombot memory forget
// does: its text goes from every store.
func (s *Server) forgetNote(w http.ResponseWriter, r *http.Request, sess session) {
	p := s.person(r)
	if p == nil {
		s.fail(w, r, sess, http.StatusNotFound, "There is nobody by that name in the family.")
		return
	}
	if !s.hasNotes(p) {
		s.fail(w, r, sess, http.StatusNotFound, fmt.Sprintf("%s has no notes.", p.Name))
		return
	}
	id, err := strconv.Atoi(r.PathValue("note"))
	if err != nil || id < 1 {
		s.fail(w, r, sess, http.StatusNotFound, "There is no such note.")
		return
	}
	note, err := s.o.Memory.ForgetNote(r.Context(), s.o.Notes, p.Key, id)
	switch {
	case errors.Is(err, conversation.ErrNoNote):
		s.fail(w, r, sess, http.StatusNotFound, fmt.Sprintf("There is no note #%d that %s sees; it may be forgotten already.", id, p.Name))
		return
	case err != nil && note.ID != 0:
		s.log.Error("web: forgetting a note: removing its text everywhere", "person", p.Name, "note", id, "err", err)
		s.fail(w, r, sess, http.StatusInternalServerError, fmt.Sprintf("Note #%d is forgotten, but removing its text everywhere failed; forget it again once the store is reachable (the log has the detail).", id))
		return
	case err != nil:
		s.log.Error("web: forgetting a note", "person", p.Name, "note", id, "err", err)
		s.fail(w, r, sess, http.StatusInternalServerError, "The note could not be forgotten; the log has the detail.")
		return
	}
	s.log.Info("web: note forgotten", "person", p.Name, "note", id)
	http.Redirect(w, r, "/people/"+p.ID, http.StatusSeeOther)
}

// deleteSummary deletes the person's running summary.
func (s *Server) deleteSummary(w http.ResponseWriter, r *http.Request, sess session) {
	p := s.person(r)
	if p == nil {
		s.fail(w, r, sess, http.StatusNotFound, "There is nobody by that name in the family.")
		return
	}
	deleted, err := s.o.Memory.DeleteSummary(r.Context(), p.Key)
	if err != nil {
		s.log.Error("web: deleting a summary", "person", p.Name, "err", err)
		s.fail(w, r, sess, http.StatusInternalServerError, "The summary could not be deleted; the log has the detail.")
		return
	}
	if deleted {
		s.log.Info("web: summary deleted", "person", p.Name)
	}
	http.Redirect(w, r, "/people/"+p.ID, http.StatusSeeOther)
}
