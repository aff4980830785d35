package lists_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant/lists"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
)

// open returns lists kept in a fresh jsonfile store, and the store's path,
// on which another process's store may be opened.
func open(t *testing.T) (*lists.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "conversations.json")
	return openOn(t, path, nil), path
}

// openOn returns lists kept in the jsonfile store at path, as another
// process would open it.
func openOn(t *testing.T, path string, now func() time.Time) *lists.Store {
	t.Helper()
	st, err := jsonfile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mem, err := conversation.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return lists.New(mem, now)
}

// storedBytes returns the size of the lists as the store at path keeps
// them.
func storedBytes(t *testing.T, path string) int {
	t.Helper()
	st, err := jsonfile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Get(context.Background(), conversation.Lists, conversation.ListsKey)
	if errors.Is(err, conversation.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(rec.Data)
}

func texts(items []lists.Item) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Text
	}
	return fmt.Sprint(out)
}

func TestAddRemove(t *testing.T) {
	ctx := context.Background()
	s, path := open(t)
	got, err := s.Add(ctx, "Grocery ", []string{"milk", " eggs ", "Milk", "chicken thighs"}, "Erin")
	if err != nil || texts(got) != "[milk eggs chicken thighs]" || got[0].AddedBy != "Erin" {
		t.Fatalf("Add = %v, %v", texts(got), err)
	}
	removed, left, err := s.Remove(ctx, "grocery", []string{"chicken"}, []int{1}, "Erin")
	if err != nil || texts(removed) != "[milk chicken thighs]" || texts(left) != "[eggs]" {
		t.Fatalf("Remove = %v, %v, %v", texts(removed), texts(left), err)
	}
	if _, _, err := s.Remove(ctx, "grocery", nil, []int{2}, "Erin"); !errors.Is(err, lists.ErrNoItem) {
		t.Errorf("removing item 2 of 1: %v", err)
	}
	if _, _, err := s.Remove(ctx, "to-do", []string{"x"}, nil, "Erin"); !errors.Is(err, lists.ErrNoList) {
		t.Errorf("removing from a missing list: %v", err)
	}
	// Another process on the same store sees everything.
	s2 := openOn(t, path, nil)
	items, err := s2.Items(ctx, "GROCERY")
	if err != nil || texts(items) != "[eggs]" {
		t.Errorf("reopened: %v, %v", texts(items), err)
	}
	if _, _, err := s2.Remove(ctx, "grocery", []string{"eggs"}, nil, "Erin"); err != nil {
		t.Fatal(err)
	}
	if sums, _ := s.Lists(ctx); len(sums) != 0 {
		t.Errorf("an empty list is kept: %v", sums)
	}
}

func TestAmbiguousText(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	if _, err := s.Add(ctx, "grocery", []string{"red apples", "green apples"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Remove(ctx, "grocery", []string{"apples"}, nil, "Erin"); !errors.Is(err, lists.ErrNoItem) {
		t.Errorf("an ambiguous text removed something: %v", err)
	}
	if items, _ := s.Items(ctx, "grocery"); len(items) != 2 {
		t.Errorf("a failed removal changed the list: %v", texts(items))
	}
}

func TestConcurrentAdds(t *testing.T) {
	s, path := open(t)
	s2 := openOn(t, path, nil)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := s
			if i%2 == 1 {
				st = s2
			}
			if _, err := st.Add(context.Background(), "to-do", []string{fmt.Sprint("task ", i)}, ""); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if items, _ := s.Items(context.Background(), "to-do"); len(items) != 20 {
		t.Errorf("%d items, want 20: an update was lost", len(items))
	}
}

// TestRemoveItemAndDelete checks the page's edits: an item is removed by
// its whole text only, never by a part of another's, and a list goes
// whole.
func TestRemoveItemAndDelete(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	if _, err := s.Add(ctx, "grocery", []string{"milk", "oat milk"}, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveItem(ctx, "Grocery", "MILK"); err != nil {
		t.Fatal(err)
	}
	// The same button pressed twice: "milk" is gone, and "oat milk",
	// which contains it, stays.
	if err := s.RemoveItem(ctx, "grocery", "milk"); !errors.Is(err, lists.ErrNoItem) {
		t.Errorf("removing a removed item: %v, want ErrNoItem", err)
	}
	if items, err := s.Items(ctx, "grocery"); err != nil || texts(items) != "[oat milk]" {
		t.Errorf("after removing milk: %v, %v", texts(items), err)
	}
	if err := s.RemoveItem(ctx, "to-do", "x"); !errors.Is(err, lists.ErrNoList) {
		t.Errorf("removing from a missing list: %v, want ErrNoList", err)
	}
	if err := s.Delete(ctx, "GROCERY"); err != nil {
		t.Fatal(err)
	}
	if sums, err := s.Lists(ctx); err != nil || len(sums) != 0 {
		t.Errorf("after Delete: %v, %v", sums, err)
	}
	if err := s.Delete(ctx, "grocery"); !errors.Is(err, lists.ErrNoList) {
		t.Errorf("deleting a deleted list: %v, want ErrNoList", err)
	}
}

// clock is a settable time for the lists.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// openAt opens lists with a clock of their own.
func openAt(t *testing.T) (*lists.Store, string, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 3, 2, 17, 5, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "conversations.json")
	return openOn(t, path, c.now), path, c
}

// TestLimits checks each limit of the lists: what is just within it is
// kept, what is past it is refused whole with ErrLimit and a message that
// says the limit, and nothing is cut silently.
func TestLimits(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		rule  string
		setup func(s *lists.Store) error
		list  string
		items []string
		want  string // "" when the add is accepted
	}{
		{"a name of 100 characters is kept", nil, strings.Repeat("n", 100), []string{"milk"}, ""},
		{"a name of 101 characters is refused", nil, strings.Repeat("n", 101), []string{"milk"}, "a list name may be at most 100 characters, and this one has 101"},
		{"a name of 20,000 characters is refused", nil, strings.Repeat("n", 20_000), []string{"milk"}, "a list name may be at most 100 characters, and this one has 20000"},
		{"an item of 200 characters is kept, counted in characters", nil, "grocery", []string{strings.Repeat("é", 200)}, ""},
		{"an item of 201 characters is refused", nil, "grocery", []string{"milk", strings.Repeat("x", 201)}, "an item may be at most 200 characters, and this one has 201"},
		{"the 50th list is kept", addLists(49), "grocery", []string{"milk"}, ""},
		{"the 51st list is refused", addLists(50), "grocery", []string{"milk"}, "the family already has 50 lists"},
		{"an existing list takes items with 50 lists", addLists(50), "list 1", []string{"milk"}, ""},
		{"the 500th item is kept", addItems("grocery", 499), "grocery", []string{"milk"}, ""},
		{"the 501st item is refused", addItems("grocery", 500), "grocery", []string{"milk"}, "the grocery list is full (500 items"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			s, _ := open(t)
			if tt.setup != nil {
				if err := tt.setup(s); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := s.Lists(ctx)
			_, err := s.Add(ctx, tt.list, tt.items, "Erin")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, lists.ErrLimit) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrLimit saying %q", err, tt.want)
			}
			if after, _ := s.Lists(ctx); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("a refused add changed the lists")
			}
		})
	}
}

func addLists(n int) func(*lists.Store) error {
	return func(s *lists.Store) error {
		for i := range n {
			if _, err := s.Add(context.Background(), fmt.Sprint("list ", i+1), []string{"x"}, ""); err != nil {
				return err
			}
		}
		return nil
	}
}

func addItems(list string, n int) func(*lists.Store) error {
	return func(s *lists.Store) error {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprint("item ", i)
		}
		_, err := s.Add(context.Background(), list, items, "")
		return err
	}
}

// TestItemTextCleaned checks that control characters and runs of white
// space in an item or a name are one space, not kept.
func TestItemTextCleaned(t *testing.T) {
	s, _ := open(t)
	got, err := s.Add(context.Background(), "Gro\x00cery\n", []string{"oat\x07milk\t\t2 l"}, "")
	if err != nil || texts(got) != "[oat milk 2 l]" {
		t.Fatalf("Add = %v, %v", texts(got), err)
	}
	if sums, _ := s.Lists(context.Background()); len(sums) != 1 || sums[0].Name != "gro cery" {
		t.Errorf("lists %v", sums)
	}
}

// TestBounded fills the lists as a runaway model would, 500 items of
// 200 characters to list after list: the adds past MaxBytes are refused,
// the stored lists stay under it, and removing still works when they are
// full.
func TestBounded(t *testing.T) {
	ctx := context.Background()
	s, path := open(t)
	refused := 0
	for i := range 25 {
		items := make([]string, 500)
		for j := range items {
			items[j] = fmt.Sprintf("%03d %03d %s", i, j, strings.Repeat("x", 192))
		}
		_, err := s.Add(ctx, fmt.Sprint("flood ", i), items, "Erin")
		switch {
		case errors.Is(err, lists.ErrLimit):
			refused++
			if !strings.Contains(err.Error(), "the lists are full") {
				t.Errorf("refused with %v", err)
			}
		case err != nil:
			t.Fatal(err)
		}
		if n := storedBytes(t, path); n > lists.MaxBytes {
			t.Fatalf("after add %d the lists take %d bytes, over %d", i, n, lists.MaxBytes)
		}
	}
	if refused == 0 {
		t.Fatal("nothing was refused")
	}
	// Full, yet a whole list can still be removed, and put back: all of
	// it but what the lists had no room to keep (removed items take more
	// bytes than listed ones), which is the least that was removed.
	items, _ := s.Items(ctx, "flood 0")
	positions := make([]int, len(items))
	for i := range positions {
		positions[i] = i + 1
	}
	if _, _, err := s.Remove(ctx, "flood 0", nil, positions, "Jason"); err != nil {
		t.Fatalf("removing from full lists: %v", err)
	}
	if n := storedBytes(t, path); n > lists.MaxBytes {
		t.Fatalf("after the removal the lists take %d bytes", n)
	}
	kept, _ := s.RemovedFrom(ctx, "flood 0")
	if len(kept) < 450 {
		t.Errorf("%d of 500 removed items kept to put back", len(kept))
	}
	if _, _, err := s.Restore(ctx, "flood 0", nil); err != nil {
		t.Fatalf("putting back what was removed: %v", err)
	}
	if items, _ := s.Items(ctx, "flood 0"); len(items) != len(kept) {
		t.Errorf("%d items put back, want the %d kept", len(items), len(kept))
	}
}

// TestLegacyFileOverTheLimits checks a file from before the limits, with a
// 20,000-character list name and over MaxBytes: it is imported whole, its
// lists can be removed, and nothing can be added until they are under the
// limit.
func TestLegacyFileOverTheLimits(t *testing.T) {
	ctx := context.Background()
	s, store := open(t)
	path := filepath.Join(t.TempDir(), "lists.json")
	long := strings.Repeat("n", 20_000)
	legacy := map[string]map[string][]lists.Item{"lists": {long: {{Text: "x"}}}}
	for i := range 4 {
		var items []lists.Item
		for j := range 500 {
			items = append(items, lists.Item{Text: fmt.Sprintf("%d %d %s", i, j, strings.Repeat("y", 250))})
		}
		legacy["lists"][fmt.Sprint("big ", i)] = items
	}
	data, _ := json.Marshal(legacy)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Import(ctx, path); err != nil || n != 2001 {
		t.Fatalf("Import = %d, %v; want 2001 items", n, err)
	}
	if _, err := s.Add(ctx, "grocery", []string{"milk"}, "Erin"); !errors.Is(err, lists.ErrLimit) {
		t.Errorf("adding to lists over the limit: %v", err)
	}
	if err := s.Delete(ctx, long); err != nil {
		t.Fatalf("deleting the list with a long name: %v", err)
	}
	for i := range 4 {
		if err := s.Delete(ctx, fmt.Sprint("big ", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Add(ctx, "grocery", []string{"milk"}, "Erin"); err != nil {
		t.Errorf("adding once the file is small: %v", err)
	}
	if n := storedBytes(t, store); n > lists.MaxBytes {
		t.Errorf("the lists take %d bytes", n)
	}
}

// TestRemovedCanBePutBack checks the undo: what one member removes of
// what another added is kept, with who removed it and when, and comes back
// as it was; the lists page's removals and deletions too; and it is
// forgotten after KeepRemoved.
func TestRemovedCanBePutBack(t *testing.T) {
	ctx := context.Background()
	s, _, c := openAt(t)
	if _, err := s.Add(ctx, "grocery", []string{"milk", "eggs", "bread"}, "Jason"); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(time.Hour)
	if _, _, err := s.Remove(ctx, "grocery", nil, []int{1, 2, 3}, "Erin"); err != nil {
		t.Fatal(err)
	}
	removed, err := s.RemovedFrom(ctx, "Grocery")
	if err != nil || len(removed) != 3 || removed[0].RemovedBy != "Erin" || removed[0].AddedBy != "Jason" || !removed[0].RemovedAt.Equal(c.t) {
		t.Fatalf("RemovedFrom = %+v, %v", removed, err)
	}
	// Undo the last removal: all three come back, as Jason added them.
	restored, items, err := s.Restore(ctx, "grocery", nil)
	if err != nil || texts(restored) != "[milk eggs bread]" || texts(items) != "[milk eggs bread]" || items[0].AddedBy != "Jason" {
		t.Fatalf("Restore = %v, %v, %v", texts(restored), texts(items), err)
	}
	if _, _, err := s.Restore(ctx, "grocery", nil); !errors.Is(err, lists.ErrNoItem) {
		t.Errorf("restoring twice: %v", err)
	}

	// One item by its text, and the lists page's removals.
	if _, _, err := s.Remove(ctx, "grocery", []string{"eggs"}, nil, "Erin"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveItem(ctx, "grocery", "milk"); err != nil {
		t.Fatal(err)
	}
	if restored, _, err := s.Restore(ctx, "grocery", []string{"EGGS"}); err != nil || texts(restored) != "[eggs]" {
		t.Errorf("restoring eggs: %v, %v", texts(restored), err)
	}
	if _, _, err := s.Restore(ctx, "grocery", []string{"butter"}); !errors.Is(err, lists.ErrNoItem) {
		t.Errorf("restoring what was never removed: %v", err)
	}
	if err := s.Delete(ctx, "grocery"); err != nil {
		t.Fatal(err)
	}
	if restored, _, err := s.Restore(ctx, "grocery", nil); err != nil || texts(restored) != "[bread eggs]" {
		t.Errorf("undoing the deletion: %v, %v", texts(restored), err)
	}

	// A week later, what is still removed is forgotten.
	if _, _, err := s.Remove(ctx, "grocery", []string{"bread"}, nil, "Erin"); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(lists.KeepRemoved + time.Minute)
	if _, _, err := s.Restore(ctx, "grocery", nil); !errors.Is(err, lists.ErrNoItem) {
		t.Errorf("restoring after a week: %v", err)
	}
	if removed, _ := s.RemovedFrom(ctx, ""); len(removed) != 0 {
		t.Errorf("removed items kept after a week: %+v", removed)
	}
}
