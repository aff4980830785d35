// Package atomicfile replaces files so that a crash at any instant leaves
// either the old file or the new one, whole, and once a write has returned
// the new file survives a power loss: the content goes to a temporary file
// in the same folder, which is synced, renamed over the target, and the
// folder is synced so the rename itself is durable. New files have mode
// 0600: everything mombot writes belongs to a family.
package atomicfile

import (
	"io"
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
