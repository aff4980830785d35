package atomicfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestMkdirAllSyncsTheParentOfEachNewFolder(t *testing.T) {
	root := t.TempDir()
	var synced []string
	syncDir = func(dir string) error {
		synced = append(synced, dir)
		return fsyncDir(dir)
	}
	defer func() { syncDir = fsyncDir }()

	dir := filepath.Join(root, "a", "b")
	if err := MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("stat %s: %v, %v; want a folder with mode 0700", dir, fi, err)
	}
	if want := []string{root, filepath.Join(root, "a")}; !slices.Equal(synced, want) {
		t.Fatalf("synced %q, want %q: the parent of each new folder, top down", synced, want)
	}

	synced = nil
	if err := MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 0 {
		t.Fatalf("an existing folder made MkdirAll sync %q", synced)
	}

	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(root, "file", "x"), 0o700); err == nil {
		t.Fatal("MkdirAll under a regular file succeeded")
	}
}
