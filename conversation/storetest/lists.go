package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// listsTests are the cases of the family's lists
// ([conversation.Memory.UpdateFamilyLists]), which every store keeps next
// to the conversations. Each says which rule it checks.
var listsTests = []struct {
	name string
	rule string
	fn   func(t *testing.T, e *env)
}{
	{"ListsEmpty", "a store that has kept no lists reads as no lists, not as an error", testListsEmpty},
	{"ListsRoundTrip", "what a change wrote reads back, item for item, after the store is closed and reopened", testListsRoundTrip},
	{"ListsNoDuplicates", "an item already on a list, in any case, is not added twice", testListsNoDuplicates},
	{"ListsFailedChange", "a change that returns an error writes nothing and its error comes back as it is", testListsFailedChange},
	{"ListsApartFromConversations", "clearing and sweeping conversations leave the lists as they were", testListsApart},
	{"ListsConcurrent", "concurrent adders, from many goroutines and from two stores open on the same storage (as two processes or replicas), lose no item", testListsConcurrent},
}

// runLists runs the lists cases as part of [Run].
func runLists(t *testing.T, newStorage NewStorage) {
	for _, tt := range listsTests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, newStorage)
			defer e.checkInvariants()
			defer func() {
				if t.Failed() {
					t.Logf("rule: %s", tt.rule)
				}
			}()
			tt.fn(t, e)
		})
	}
}

const listsPhone = "+14155550100"

var listsAt = time.Date(2026, 2, 24, 10, 35, 0, 123456789, time.UTC)

// addToList adds items to list through mem.
func addToList(mem *conversation.Memory, list string, texts ...string) error {
	items := make([]conversation.ListItem, len(texts))
	for i, text := range texts {
		items[i] = conversation.ListItem{Text: text, AddedBy: "Erin", AddedAt: listsAt}
	}
	return mem.UpdateFamilyLists(ctx(), func(l *conversation.FamilyLists) error {
		l.Add(list, items)
		return nil
	})
}

// listTexts returns the texts of list as e's memory reads them.
func (e *env) listTexts(list string) []string {
	e.t.Helper()
	l, err := e.mem.FamilyLists(ctx())
	if err != nil {
		e.t.Fatalf("FamilyLists: %v", err)
	}
	var out []string
	for _, it := range l.Lists[list] {
		out = append(out, it.Text)
	}
	return out
}

func (e *env) assertList(list string, want ...string) {
	e.t.Helper()
	if got := e.listTexts(list); !slices.Equal(got, want) {
		e.t.Fatalf("list %q holds %q, want %q", list, got, want)
	}
}

func testListsEmpty(t *testing.T, e *env) {
	l, err := e.mem.FamilyLists(ctx())
	if err != nil || len(l.Lists) != 0 || len(l.Removed) != 0 {
		t.Fatalf("FamilyLists = %+v, %v; want no lists and no error", l, err)
	}
}

func testListsRoundTrip(t *testing.T, e *env) {
	if err := addToList(e.mem, "grocery", "milk", "eggs"); err != nil {
		t.Fatal(err)
	}
	err := e.mem.UpdateFamilyLists(ctx(), func(l *conversation.FamilyLists) error {
		l.Removed = append(l.Removed, conversation.RemovedItem{List: "grocery", ListItem: conversation.ListItem{Text: "bread", AddedAt: listsAt},
			RemovedBy: "Jason", RemovedAt: listsAt.Add(time.Hour), Removal: 1})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.reopen(nil)
	e.assertList("grocery", "milk", "eggs")
	l, err := e.mem.FamilyLists(ctx())
	if err != nil {
		t.Fatal(err)
	}
	if it := l.Lists["grocery"][0]; it.AddedBy != "Erin" || !it.AddedAt.Equal(listsAt) {
		t.Errorf("first item %+v, want added by Erin at %v", it, listsAt)
	}
	if len(l.Removed) != 1 || l.Removed[0].Text != "bread" || l.Removed[0].RemovedBy != "Jason" || l.Removed[0].Removal != 1 {
		t.Errorf("removed %+v, want bread removed by Jason", l.Removed)
	}
}

func testListsNoDuplicates(t *testing.T, e *env) {
	if err := addToList(e.mem, "grocery", "milk", "MILK", "eggs"); err != nil {
		t.Fatal(err)
	}
	if err := addToList(e.mem, "grocery", "Eggs", "bread"); err != nil {
		t.Fatal(err)
	}
	e.assertList("grocery", "milk", "eggs", "bread")
}

func testListsFailedChange(t *testing.T, e *env) {
	if err := addToList(e.mem, "grocery", "milk"); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	err := e.mem.UpdateFamilyLists(ctx(), func(l *conversation.FamilyLists) error {
		l.Add("grocery", []conversation.ListItem{{Text: "eggs", AddedAt: listsAt}})
		return refused
	})
	if err != refused {
		t.Fatalf("UpdateFamilyLists = %v, want the change's own error", err)
	}
	e.assertList("grocery", "milk")
}

func testListsApart(t *testing.T, e *env) {
	if err := addToList(e.mem, "grocery", "milk"); err != nil {
		t.Fatal(err)
	}
	e.save(listsPhone, TextTurn("hi", "hello")...)
	if err := e.mem.Clear(ctx(), listsPhone); err != nil {
		t.Fatal(err)
	}
	e.save(listsPhone, TextTurn("hi", "hello")...)
	e.clock.Advance(conversation.DefaultTimeout + time.Hour)
	if _, err := e.mem.Sweep(ctx()); err != nil {
		t.Fatal(err)
	}
	e.assertList("grocery", "milk")
}

func testListsConcurrent(t *testing.T, e *env) {
	second, err := e.open()
	if err != nil {
		t.Fatalf("open a second store on the same storage: %v", err)
	}
	t.Cleanup(func() {
		if second != e.store {
			second.Close()
		}
	})
	other, err := conversation.New(second, &e.opts)
	if err != nil {
		t.Fatal(err)
	}
	mems := []*conversation.Memory{e.mem, other}
	const workers, adds = 6, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*adds)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range adds {
				if err := addToList(mems[w%len(mems)], "to-do", fmt.Sprintf("task %d.%d", w, i)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent add: %v", err)
	}
	got := e.listTexts("to-do")
	if len(got) != workers*adds {
		t.Fatalf("%d items on the list, want %d: an add was lost", len(got), workers*adds)
	}
	for w := range workers {
		for i := range adds {
			if want := fmt.Sprintf("task %d.%d", w, i); !slices.Contains(got, want) {
				t.Errorf("%q is missing", want)
			}
		}
	}
}
