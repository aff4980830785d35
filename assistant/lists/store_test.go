package lists_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mombot/mombot/assistant/lists"
)

func open(t *testing.T) (*lists.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lists.json")
	s, err := lists.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
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
	removed, left, err := s.Remove(ctx, "grocery", []string{"chicken"}, []int{1})
	if err != nil || texts(removed) != "[milk chicken thighs]" || texts(left) != "[eggs]" {
		t.Fatalf("Remove = %v, %v, %v", texts(removed), texts(left), err)
	}
	if _, _, err := s.Remove(ctx, "grocery", nil, []int{2}); !errors.Is(err, lists.ErrNoItem) {
		t.Errorf("removing item 2 of 1: %v", err)
	}
	if _, _, err := s.Remove(ctx, "to-do", []string{"x"}, nil); !errors.Is(err, lists.ErrNoList) {
		t.Errorf("removing from a missing list: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, %v", fi.Mode().Perm(), err)
	}

	// Another store on the same file sees everything.
	s2, err := lists.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	items, err := s2.Items("GROCERY")
	if err != nil || texts(items) != "[eggs]" {
		t.Errorf("reopened: %v, %v", texts(items), err)
	}
	if _, _, err := s2.Remove(ctx, "grocery", []string{"eggs"}, nil); err != nil {
		t.Fatal(err)
	}
	if sums, _ := s.Lists(); len(sums) != 0 {
		t.Errorf("an empty list is kept: %v", sums)
	}
}

func TestAmbiguousText(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	if _, err := s.Add(ctx, "grocery", []string{"red apples", "green apples"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Remove(ctx, "grocery", []string{"apples"}, nil); !errors.Is(err, lists.ErrNoItem) {
		t.Errorf("an ambiguous text removed something: %v", err)
	}
	if items, _ := s.Items("grocery"); len(items) != 2 {
		t.Errorf("a failed removal changed the list: %v", texts(items))
	}
}

func TestConcurrentAdds(t *testing.T) {
	s, path := open(t)
	s2, err := lists.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	if items, _ := s.Items("to-do"); len(items) != 20 {
		t.Errorf("%d items, want 20: an update was lost", len(items))
	}
}

func TestOpenBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lists.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lists.Open(path, nil); err == nil {
		t.Error("opened a corrupt file")
	}
	// A missing data folder is created, as on a first run.
	if _, err := lists.Open(filepath.Join(t.TempDir(), "missing", "lists.json"), nil); err != nil {
		t.Errorf("a missing data folder: %v", err)
	}
	// A folder that cannot be one is an error.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := lists.Open(filepath.Join(file, "lists.json"), nil); err == nil {
		t.Error("opened a list under a file")
	}
}

// TestOpenRemovesTemps checks that the temporary file of a save killed
// mid-write is removed when the lists are opened, and the lists kept.
func TestOpenRemovesTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lists.json")
	if err := os.WriteFile(path, []byte(`{"lists":{"grocery":[{"text":"milk","added_at":"2026-01-02T03:04:05Z"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, ".lists.json.tmp-1234")
	if err := os.WriteFile(leftover, []byte(`{"lists":`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := lists.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); err == nil {
		t.Error("the leftover temporary file is still there")
	}
	items, err := s.Items("grocery")
	if err != nil || texts(items) != "[milk]" {
		t.Errorf("Items = %v, %v; want [milk]", texts(items), err)
	}
}

// TestOpenEmptyFile checks that a 0-byte lists file is an unparsable file
// like any other, not silently an empty set of lists.
func TestOpenEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lists.json")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lists.Open(path, nil); err == nil {
		t.Error("opened a 0-byte lists file as if it were empty lists")
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
	if items, err := s.Items("grocery"); err != nil || texts(items) != "[oat milk]" {
		t.Errorf("after removing milk: %v, %v", texts(items), err)
	}
	if err := s.RemoveItem(ctx, "to-do", "x"); !errors.Is(err, lists.ErrNoList) {
		t.Errorf("removing from a missing list: %v, want ErrNoList", err)
	}
	if err := s.Delete(ctx, "GROCERY"); err != nil {
		t.Fatal(err)
	}
	if sums, err := s.Lists(); err != nil || len(sums) != 0 {
		t.Errorf("after Delete: %v, %v", sums, err)
	}
	if err := s.Delete(ctx, "grocery"); !errors.Is(err, lists.ErrNoList) {
		t.Errorf("deleting a deleted list: %v, want ErrNoList", err)
	}
}
