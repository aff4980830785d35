package lists_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/mombot/mombot/assistant/lists"
)

// TestImportMerges checks the import of two replicas' lists.json files
// into one store: every item of both is kept, an item in both (in any
// case) once, the removed items of both can be put back, each file is
// renamed, and importing again changes nothing.
func TestImportMerges(t *testing.T) {
	ctx := context.Background()
	s, _, c := openAt(t)
	if _, err := s.Add(ctx, "grocery", []string{"bread"}, "Erin"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a := write(t, filepath.Join(dir, "a", "lists.json"), `{"lists":{"grocery":[
		{"text":"milk","added_by":"Erin","added_at":"2026-03-01T10:00:00Z"},
		{"text":"Bread","added_at":"2026-03-01T10:00:00Z"}]},
	  "removed":[{"list":"grocery","text":"eggs","added_at":"2026-03-01T09:00:00Z","removed_by":"Jason","removed_at":"2026-03-02T09:00:00Z","removal":1}]}`)
	b := write(t, filepath.Join(dir, "b", "lists.json"), `{"lists":{"Grocery":[
		{"text":"MILK","added_at":"2026-03-01T11:00:00Z"},
		{"text":"apples","added_at":"2026-03-01T11:00:00Z"}],
	  "to-do":[{"text":"call the school","added_at":"2026-03-01T11:00:00Z"}]},
	  "removed":[{"list":"to-do","text":"taxes","added_at":"2026-03-01T09:00:00Z","removed_at":"2026-03-02T10:00:00Z","removal":1}]}`)
	for _, tt := range []struct {
		path string
		want int
	}{{a, 1}, {b, 2}, {a, 0}, {b, 0}} {
		if n, err := s.Import(ctx, tt.path); err != nil || n != tt.want {
			t.Fatalf("Import(%s) = %d, %v; want %d", tt.path, n, err, tt.want)
		}
		if _, err := os.Stat(tt.path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there after the import: %v", tt.path, err)
		}
		if _, err := os.Stat(tt.path + lists.ImportedSuffix); err != nil {
			t.Errorf("no %s after the import: %v", tt.path+lists.ImportedSuffix, err)
		}
	}
	items, _ := s.Items(ctx, "grocery")
	if texts(items) != "[bread milk apples]" || items[1].AddedBy != "Erin" {
		t.Errorf("grocery = %v (%+v), want [bread milk apples], milk added by Erin", texts(items), items)
	}
	if items, _ := s.Items(ctx, "to-do"); texts(items) != "[call the school]" {
		t.Errorf("to-do = %v", texts(items))
	}
	c.t = c.t.Add(-5 * 3600e9) // within a week of both removals
	if back, _, err := s.Restore(ctx, "grocery", nil); err != nil || texts(back) != "[eggs]" {
		t.Errorf("putting back a removal of replica a: %v, %v", texts(back), err)
	}
	if back, _, err := s.Restore(ctx, "to-do", nil); err != nil || texts(back) != "[taxes]" {
		t.Errorf("putting back a removal of replica b: %v, %v", texts(back), err)
	}
}

// TestImportRefusesBadFile checks that a lists file that does not parse,
// a 0-byte one included, is an error that changes nothing and leaves the
// file where it is, and that no file is nothing to import.
func TestImportRefusesBadFile(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	for _, data := range []string{"{not json", "", "[1,2]"} {
		path := write(t, filepath.Join(t.TempDir(), "lists.json"), data)
		if _, err := s.Import(ctx, path); err == nil {
			t.Errorf("imported %q", data)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("a bad file was moved: %v", err)
		}
	}
	if sums, _ := s.Lists(ctx); len(sums) != 0 {
		t.Errorf("a bad file changed the lists: %v", sums)
	}
	if n, err := s.Import(ctx, filepath.Join(t.TempDir(), "lists.json")); n != 0 || err != nil {
		t.Errorf("importing no file: %d, %v", n, err)
	}
}

func write(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
