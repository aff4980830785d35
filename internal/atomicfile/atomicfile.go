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

// WriteFile replaces the file at path with data, as [Write] does.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
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
