package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mombot/mombot/internal/atomicfile"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	os.WriteFile(path, []byte("old"), 0o644)
	if err := atomicfile.WriteFile(path, []byte("new")); err != nil {
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
	if err := atomicfile.WriteFile(filepath.Join(dir, "missing", "f"), nil); err == nil {
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
