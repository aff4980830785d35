package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/mombot/mombot/conversation"
)

// ErrDiskFull is wrapped by the errors of a write that failed because the
// disk holding the database is full.
var ErrDiskFull = errors.New("the disk is full")

// ErrCorrupt is wrapped by the errors about a file that is not an SQLite
// database, or a damaged one. The file is left as it is.
var ErrCorrupt = errors.New("the database is damaged or is not an SQLite database")

// Primary result codes (https://www.sqlite.org/rescode.html). Extended codes
// carry the primary one in their low byte: SQLITE_IOERR_SHMSIZE is 4874 =
// 19<<8 | 10.
const (
	codeBusy     = 5  // SQLITE_BUSY
	codeReadOnly = 8  // SQLITE_READONLY
	codeIOErr    = 10 // SQLITE_IOERR and its extended codes
	codeCorrupt  = 11 // SQLITE_CORRUPT
	codeFull     = 13 // SQLITE_FULL
	codeNotADB   = 26 // SQLITE_NOTADB
)

// plainError says in words what a driver error means for the person who runs
// mombot, and keeps the driver's error (with its code) for logs and
// errors.As.
type plainError struct {
	plain  error  // ErrDiskFull, ErrCorrupt or conversation.ErrReadOnly
	advice string // what to do about it
	err    error  // the driver's
}

func (e *plainError) Error() string {
	return fmt.Sprintf("%v: %s (SQLite: %v)", e.plain, e.advice, e.err)
}

func (e *plainError) Unwrap() []error { return []error{e.plain, e.err} }

// freeBytes returns the space left to unprivileged users on the file system
// holding dir; a variable so that tests can fill a disk.
var freeBytes = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// lowSpace is the free space under which an I/O error is taken for the disk
// filling up: SQLite writes a few pages at a time.
const lowSpace = 1 << 20

// translate turns the driver's errors about a full disk, a damaged file or a
// file that cannot be written into errors that say so in words; others it
// returns as they are. SQLite reports a full disk as SQLITE_FULL for the
// database, but as an I/O error (SQLITE_IOERR_SHMSIZE, SQLITE_IOERR_WRITE)
// when growing the -wal or -shm fails; the driver does not pass the errno
// on, so an I/O error counts as a full disk when the file system has
// (almost) no space left.
func (s *Store) translate(err error) error {
	var coded interface{ Code() int }
	var done *plainError
	if err == nil || !errors.As(err, &coded) || errors.As(err, &done) {
		return err
	}
	full := &plainError{ErrDiskFull, fmt.Sprintf("the disk holding %s has no space left; free some space, and the records already saved are kept", s.path), err}
	switch coded.Code() & 0xff {
	case codeFull:
		return full
	case codeIOErr:
		if free, serr := freeBytes(filepath.Dir(s.path)); serr == nil && free < lowSpace {
			return full
		}
	case codeCorrupt, codeNotADB:
		return &plainError{ErrCorrupt, fmt.Sprintf("%s was left as it is; move it aside to start afresh, or restore it from a backup", s.path), err}
	case codeReadOnly:
		return &plainError{conversation.ErrReadOnly, fmt.Sprintf("%s or its folder cannot be written; check their owner and permissions and that the disk is not mounted read-only", s.path), err}
	}
	return err
}

// isBusy reports whether err is SQLite's SQLITE_BUSY.
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == codeBusy
}
