package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mombot/mombot/internal/atomicfile"
)

// writeFile replaces the file at path with data through atomicfile.Write.
func writeFile(path string, data []byte) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	os.WriteFile(path, []byte("old"), 0o644)
	if err := writeFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(got) != "new" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("content %q mode %v, want \"new\" 0600", got, fi.Mode().Perm())
	}
	assertNoTemp(t, dir)
}

func TestFailedWriteChangesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	os.WriteFile(path, []byte("old"), 0o600)
	boom := errors.New("boom")
	err := atomicfile.Write(path, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the writer's error", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("a failed write changed the file to %q", got)
	}
	assertNoTemp(t, dir)
	if err := writeFile(filepath.Join(dir, "missing", "f"), nil); err == nil {
		t.Fatal("a write into a missing folder succeeded")
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix("*")+"*"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestRemoveTemps checks that the temporary files a killed writer left
// behind are removed, and nothing else: not the file, not another file's
// temporaries, not a file whose name only looks alike.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a[1].json")
	keep := []string{"a[1].json", ".other.json.tmp-123", "a[1].json.tmp-1", ".a[1].json.tmpx"}
	gone := []string{".a[1].json.tmp-123", ".a[1].json.tmp-"}
	for _, n := range append(append([]string{}, keep...), gone...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := atomicfile.RemoveTemps(path)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(gone) {
		t.Errorf("RemoveTemps = %d, want %d", n, len(gone))
	}
	for _, name := range keep {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
	for _, name := range gone {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s is still there", name)
		}
	}
}
