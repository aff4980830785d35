// Package atomicfile replaces files so that a crash at any instant leaves
// either the old file or the new one, whole, and once a write has returned
// the new file survives a power loss: the content goes to a temporary file
// in the same folder, which is synced, renamed over the target, and the
// folder is synced so the rename itself is durable. New files have mode
// 0600: everything mombot writes belongs to a family.
package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// TempPrefix is how the temporary files of a write to a file named base
// begin; a writer killed mid-write leaves one behind, which the owner of
// the file may remove while no writer runs.
func TempPrefix(base string) string { return "." + base + ".tmp-" }

// RemoveTemps deletes the temporary files that writes to path left behind
// when their process was killed mid-write, and returns how many it removed.
// Call it only while nobody writes path: holding the file's lock, or from
// its only writer before it starts writing. A temporary file that cannot be
// removed is reported; the others are still removed.
func RemoveTemps(path string) (int, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// Glob fails only on a malformed pattern; escape the base's own
	// pattern characters so that a file named "a[1].json" is matched too.
	names, err := filepath.Glob(filepath.Join(dir, escapeGlob(TempPrefix(base))+"*"))
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, n := range names {
		if err := os.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// escapeGlob quotes the characters filepath.Match treats as patterns.
func escapeGlob(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// Write replaces the file at path with what write writes. On error the file
// at path is unchanged and no temporary file is left.
func Write(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, TempPrefix(base)+"*") // mode 0600
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	renamed = true
	return syncDir(dir)
}

// MkdirAll creates dir and any parents it lacks, with mode perm, like
// os.MkdirAll, and then syncs the parent of each folder it created, from the
// top down, so that the new folders themselves survive a power loss and a
// file written into them later is not lost with them.
func MkdirAll(dir string, perm os.FileMode) error {
	var created []string
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break // it exists, or os.MkdirAll reports the error
		}
		created = append(created, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	for i := len(created) - 1; i >= 0; i-- {
		if err := syncDir(filepath.Dir(created[i])); err != nil {
			return err
		}
	}
	return nil
}

// syncDir makes a folder's entries durable; a variable so that tests can
// see which folders are synced.
var syncDir = fsyncDir

func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
