package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/mombot/mombot/assistant/lists"
)

// listView is one list as the lists page shows it.
type listView struct {
	Name  string
	Items []itemView
}

type itemView struct {
	Text    string
	AddedBy string
	AddedAt string
}

// listsData is the lists page's own data.
type listsData struct {
	Lists   []listView
	Problem string // what went wrong with the last change, if anything
	List    string // the new list form's values, kept after a problem
	Item    string
	MaxLen  int
}

// listsPage shows the family's lists, each with its forms.
func (s *Server) listsPage(w http.ResponseWriter, r *http.Request, sess session) {
	s.showLists(w, r, sess, http.StatusOK, &listsData{})
}

func (s *Server) showLists(w http.ResponseWriter, r *http.Request, sess session, status int, d *listsData) {
	d.MaxLen = lists.MaxItemLen
	sums, err := s.o.Lists.Lists(r.Context())
	if err != nil {
		s.log.Error("web: reading the lists", "err", err)
		d.Problem = "The lists could not be read just now; the log has the detail."
	}
	for _, sum := range sums {
		items, err := s.o.Lists.Items(r.Context(), sum.Name)
		if errors.Is(err, lists.ErrNoList) {
			continue // emptied since
		}
		if err != nil {
			s.log.Error("web: reading a list", "err", err)
			d.Problem = "The lists could not be read just now; the log has the detail."
			break
		}
		lv := listView{Name: sum.Name}
		for _, it := range items {
			iv := itemView{Text: it.Text, AddedBy: it.AddedBy}
			if !it.AddedAt.IsZero() {
				iv.AddedAt = it.AddedAt.Local().Format("2 Jan")
			}
			lv.Items = append(lv.Items, iv)
		}
		d.Lists = append(d.Lists, lv)
	}
	s.render(w, status, "lists.html", s.newView(sess, "Lists", "lists", d))
}

// addItem adds an item to a list, which it creates if need be; several
// lines are several items.
func (s *Server) addItem(w http.ResponseWriter, r *http.Request, sess session) {
	list, item := r.PostForm.Get("list"), r.PostForm.Get("item")
	var items []string
	for _, line := range strings.Split(item, "\n") {
		if strings.TrimSpace(line) != "" {
			items = append(items, line)
		}
	}
	problem := ""
	switch {
	case lists.Name(list) == "":
		problem = "Give the list a name."
	case len(items) == 0:
		problem = "Write the item to add."
	}
	if problem == "" {
		if _, err := s.o.Lists.Add(r.Context(), list, items, ""); err != nil {
			problem = "Not added: " + strings.TrimPrefix(err.Error(), "lists: add: ")
		}
	}
	if problem != "" {
		s.showLists(w, r, sess, http.StatusUnprocessableEntity, &listsData{Problem: problem, List: list, Item: item})
		return
	}
	http.Redirect(w, r, "/lists#"+listAnchor(list), http.StatusSeeOther)
}

// removeItem removes one item, named by its whole text.
func (s *Server) removeItem(w http.ResponseWriter, r *http.Request, sess session) {
	list := r.PostForm.Get("list")
	err := s.o.Lists.RemoveItem(r.Context(), list, r.PostForm.Get("item"))
	switch {
	case errors.Is(err, lists.ErrNoList), errors.Is(err, lists.ErrNoItem):
		// Removed already, by someone else or by the assistant: done.
	case err != nil:
		s.log.Error("web: removing a list item", "err", err)
		s.showLists(w, r, sess, http.StatusInternalServerError, &listsData{Problem: "Not removed; the log has the detail."})
		return
	}
	http.Redirect(w, r, "/lists#"+listAnchor(list), http.StatusSeeOther)
}

// deleteList removes a list and its items.
func (s *Server) deleteList(w http.ResponseWriter, r *http.Request, sess session) {
	err := s.o.Lists.Delete(r.Context(), r.PostForm.Get("list"))
	if err != nil && !errors.Is(err, lists.ErrNoList) {
		s.log.Error("web: deleting a list", "err", err)
		s.showLists(w, r, sess, http.StatusInternalServerError, &listsData{Problem: "Not deleted; the log has the detail."})
		return
	}
	http.Redirect(w, r, "/lists", http.StatusSeeOther)
}

// listAnchor is the id of a list's section on the page.
func listAnchor(list string) string { return "list-" + slug(lists.Name(list)) }
