package jsonfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/mombot/mombot/internal/atomicfile"
)

// stamp identifies one version of the file. Every write renames a new file
// over the old one, so the inode changes with each version; size and the
// change time guard against a reused inode number.
type stamp struct {
	exists bool
	ino    uint64
	dev    uint64
	size   int64
	mtime  int64
	ctime  int64
}

func stampOf(fi fs.FileInfo) stamp {
	st := stamp{exists: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino, st.dev = uint64(sys.Ino), uint64(sys.Dev)
		st.ctime = sys.Ctim.Sec*1e9 + sys.Ctim.Nsec
	}
	return st
}

// statPath returns the stamp of the file at path; a missing file has the
// zero stamp.
func statPath(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, nil
	}
	if err != nil {
		return stamp{}, err
	}
	return stampOf(fi), nil
}

// readFile returns the file's bytes and the stamp of exactly those bytes.
func readFile(path string) ([]byte, stamp, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, stamp{}, nil
	}
	if err != nil {
		return nil, stamp{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, stamp{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, stamp{}, errors.New(path + " is not a regular file")
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, stamp{}, err
	}
	return data, stampOf(fi), nil
}

// writeFile replaces the file at path with what write writes, atomically
// and durably (see package atomicfile), and returns the stamp of the new
// file and its size.
func writeFile(path string, write func(io.Writer) (int64, error)) (stamp, int64, error) {
	var size int64
	err := atomicfile.Write(path, func(w io.Writer) error {
		n, err := write(w)
		size = n
		return err
	})
	if err != nil {
		return stamp{}, 0, err
	}
	st, err := statPath(path)
	if err != nil {
		return stamp{}, 0, err
	}
	return st, size, nil
}

// lockFile takes an exclusive advisory lock (flock) on f, waiting for it.
// It orders writers of different processes; within a process the store's
// mutex does.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
