package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
)

// ErrDiskFull is wrapped by the errors of a write that failed because the
// disk holding the database is full.
var ErrDiskFull = errors.New("the disk is full")

// ErrReadOnly is wrapped by the errors of a write to a database that can
// only be read: file or folder permissions, a read-only mount, or a file
// replaced under an open connection.
var ErrReadOnly = errors.New("the database cannot be written")

// Primary result codes (https://www.sqlite.org/rescode.html). Extended
// codes carry the primary one in their low byte: SQLITE_IOERR_SHMSIZE is
// 4874 = 19<<8 | 10, SQLITE_READONLY_DBMOVED is 1032 = 4<<8 | 8.
const (
	codeReadOnly = 8  // SQLITE_READONLY
	codeIOErr    = 10 // SQLITE_IOERR and its extended codes
	codeFull     = 13 // SQLITE_FULL
)

// plainError says in words what a driver error means for the person who
// runs mombot, and keeps the driver's error (with its code) for logs and
// errors.As.
type plainError struct {
	plain  error  // ErrDiskFull or ErrReadOnly
	advice string // what to do about it
	err    error  // the driver's error
}

func (e *plainError) Error() string {
	return fmt.Sprintf("%v: %s (SQLite: %v)", e.plain, e.advice, e.err)
}

func (e *plainError) Unwrap() []error { return []error{e.plain, e.err} }

// freeBytes returns the space left to unprivileged users on the file
// system holding dir; a variable so that tests can fill a disk.
var freeBytes = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// lowSpace is the free space under which an I/O error is taken to be the
// disk filling up: SQLite's writes are a few pages, so a disk with less
// than this left fails them.
const lowSpace = 1 << 20

// plain translates the driver's errors about a full disk or a read-only
// database at path into errors that say so in words (wrapping ErrDiskFull
// or ErrReadOnly and the driver's error); others it returns as they are.
// SQLite reports a full disk as SQLITE_FULL for the database and journal,
// but as an I/O error (such as SQLITE_IOERR_SHMSIZE, 4874, or
// SQLITE_IOERR_WRITE) when growing the WAL or its index fails with ENOSPC;
// the driver does not pass the errno on, so an I/O error counts as a full
// disk when the file system has (almost) no space left.
func plain(path string, err error) error {
	var coded interface{ Code() int }
	var done *plainError
	if err == nil || !errors.As(err, &coded) || errors.As(err, &done) {
		return err
	}
	full := &plainError{plain: ErrDiskFull, err: err,
		advice: fmt.Sprintf("the disk holding %s has no space left; free some space, and the conversations already saved are kept", path)}
	switch coded.Code() & 0xff {
	case codeFull:
		return full
	case codeIOErr:
		if free, serr := freeBytes(filepath.Dir(path)); serr == nil && free < lowSpace {
			return full
		}
	case codeReadOnly:
		return &plainError{plain: ErrReadOnly, err: err,
			advice: fmt.Sprintf("%s or its folder cannot be written; check their owner and permissions and that the disk is not mounted read-only", path)}
	}
	return err
}
