package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestLists checks the lists page: a new list with items, an item added,
// one removed (twice: the second press removes nothing else), a list
// deleted, and a refused item said so.
func TestLists(t *testing.T) {
	f := newFixture(t, nil)
	b := f.browser()
	csrf := b.csrf("/lists")
	steps := []struct {
		name   string
		path   string
		form   url.Values
		status int
		want   string // the lists after, as texts
	}{
		{"new list", "/lists/items", url.Values{"list": {"Grocery"}, "item": {"milk\r\noat milk\r\n\r\n<b>eggs</b>"}}, http.StatusSeeOther, "grocery: milk, oat milk, <b>eggs</b>"},
		{"add", "/lists/items", url.Values{"list": {"grocery"}, "item": {"bread"}}, http.StatusSeeOther, "grocery: milk, oat milk, <b>eggs</b>, bread"},
		{"remove", "/lists/items/delete", url.Values{"list": {"grocery"}, "item": {"milk"}}, http.StatusSeeOther, "grocery: oat milk, <b>eggs</b>, bread"},
		{"remove again", "/lists/items/delete", url.Values{"list": {"grocery"}, "item": {"milk"}}, http.StatusSeeOther, "grocery: oat milk, <b>eggs</b>, bread"},
		{"another list", "/lists/items", url.Values{"list": {"to-do"}, "item": {"call the plumber"}}, http.StatusSeeOther, "grocery: oat milk, <b>eggs</b>, bread; to-do: call the plumber"},
		{"no name", "/lists/items", url.Values{"list": {" "}, "item": {"x"}}, http.StatusUnprocessableEntity, "grocery: oat milk, <b>eggs</b>, bread; to-do: call the plumber"},
		{"too long", "/lists/items", url.Values{"list": {"to-do"}, "item": {strings.Repeat("x", 201)}}, http.StatusUnprocessableEntity, "grocery: oat milk, <b>eggs</b>, bread; to-do: call the plumber"},
		{"delete", "/lists/delete", url.Values{"list": {"grocery"}}, http.StatusSeeOther, "to-do: call the plumber"},
		{"delete again", "/lists/delete", url.Values{"list": {"grocery"}}, http.StatusSeeOther, "to-do: call the plumber"},
	}
	for _, s := range steps {
		s.form.Set("csrf", csrf)
		r := b.post(s.path, s.form)
		if r.status != s.status {
			t.Fatalf("%s: status %d, want %d:\n%s", s.name, r.status, s.status, r.body)
		}
		if got := f.listTexts(); got != s.want {
			t.Fatalf("%s: lists %q, want %q", s.name, got, s.want)
		}
		if s.status != http.StatusSeeOther && !strings.Contains(r.body, `class="problem"`) {
			t.Errorf("%s: the page does not say what went wrong:\n%s", s.name, r.body)
		}
	}
	page := b.get("/lists")
	if !strings.Contains(page.body, "call the plumber") || !strings.Contains(page.body, `id="list-to-do"`) {
		t.Errorf("the lists page:\n%s", page.body)
	}
}

// TestListItemsEscaped checks that list items and names show as text.
func TestListItemsEscaped(t *testing.T) {
	f := newFixture(t, nil)
	if _, err := f.lists.Add(t.Context(), `<script>x</script>`, []string{`<img src=x onerror=alert(1)>`}, `<i>Erin</i>`); err != nil {
		t.Fatal(err)
	}
	body := f.browser().get("/lists").body
	for _, bad := range []string{"<script>x", "<img src=x", "<i>Erin"} {
		if strings.Contains(body, bad) {
			t.Errorf("the lists page holds %q as markup:\n%s", bad, body)
		}
	}
	if !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Errorf("the lists page lacks the escaped item:\n%s", body)
	}
}

// listTexts returns the lists as "name: item, item; name: item".
func (f *fixture) listTexts() string {
	f.t.Helper()
	sums, err := f.lists.Lists(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, s := range sums {
		items, err := f.lists.Items(context.Background(), s.Name)
		if err != nil {
			f.t.Fatal(err)
		}
		var texts []string
		for _, it := range items {
			texts = append(texts, it.Text)
		}
		out = append(out, s.Name+": "+strings.Join(texts, ", "))
	}
	return strings.Join(out, "; ")
}
