package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mombot/mombot/internal/atomicfile"
)

// sibling is a JSON file the store keeps beside the conversations file,
// never inside it (the Python original reads every member of that file as a
// phone): the usage ledger (usage.go) and the recent messages (recent.go).
// Both follow the same rules, kept here once:
//
//   - Every change rewrites the file atomically (package atomicfile, mode
//     0600) holding the file's own lock file (its path + ".lock"), which
//     orders the writers of all processes, and the sibling's mutex, which
//     orders this process's. The lock file is opened, and created, by the
//     first change and held open until close: a store that only reads
//     never makes it. A sibling has its own lock so that a change never
//     waits for, or delays, a save of a conversation.
//   - A reader needs no lock file: the file is only ever replaced whole.
//     The content is parsed once and kept with the stamp of the version it
//     was read from or written as, and read again only when the file was
//     replaced since: one stat(2) otherwise.
//   - The first change removes the temporary files of writers killed
//     mid-write: under the lock file no writer is using one.
//   - A file that does not parse (an empty one included) is an error that
//     names it; the next change moves it aside, to path + ".corrupt-<time>",
//     with an error in the log, and starts anew: it is never overwritten.
//     A file that cannot be read is an error and stays where it is.
//   - A missing file is an empty one.
//   - A read-only store (Options.ReadOnly) reads, and its changes return
//     ErrReadOnly without creating, removing or moving any file; after
//     close every call returns ErrClosed.
type sibling[T any] struct {
	path     string
	what     string // what the file holds, for the log: "the usage ledger"
	name     string // what a file that does not parse is called in errors
	anew     string // the log's words when such a file is moved aside
	log      *slog.Logger
	readOnly bool

	empty  func() T
	parse  func([]byte) (T, error)
	render func(T) ([]byte, error)

	mu        sync.Mutex // guards the fields below and orders this process's changes
	lock      *os.File   // the lock file, opened by the first change
	closed    bool
	tempsGone bool // the leftover temporary files were removed
	cached    bool // cur is the content of stamp's version of the file
	cur       T
	stamp     stamp
}

// view runs fn on the file's content, which fn must not change or keep.
func (f *sibling[T]) view(fn func(T) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	v, err := f.read()
	if err != nil {
		return err
	}
	return fn(v)
}

// change runs fn on the file's content under the lock file and, if fn
// returns true, writes the content. fn may change the content in place:
// unless it is written, it is read again by the next call. A file that
// does not parse is moved aside first and fn is given an empty content.
func (f *sibling[T]) change(fn func(T) (bool, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if f.readOnly {
		return ErrReadOnly
	}
	if f.lock == nil {
		lock, err := os.OpenFile(f.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		f.lock = lock
	}
	if err := lockFile(f.lock); err != nil {
		return fmt.Errorf("lock %s: %w", f.lock.Name(), err)
	}
	defer unlockFile(f.lock)
	if !f.tempsGone {
		f.tempsGone = true
		if n, err := atomicfile.RemoveTemps(f.path); err != nil {
			f.log.Warn("jsonfile: removing the leftover temporary files of "+f.what, "path", f.path, "removed", n, "err", err)
		}
	}
	v, err := f.read()
	if perr := (*parseError)(nil); errors.As(err, &perr) {
		aside, merr := moveAside(f.path)
		if merr != nil {
			return fmt.Errorf("%w, and it cannot be moved aside: %w", err, merr)
		}
		f.log.Error(f.anew, "path", f.path, "moved_to", aside, "err", err)
		// Nothing is at the path now: an empty content is its content.
		v, err = f.empty(), nil
		f.cur, f.stamp, f.cached = v, stamp{}, true
	}
	if err != nil {
		return err
	}
	write, err := fn(v)
	if err != nil || !write {
		if err != nil {
			f.cached = false
		}
		return err
	}
	data, err := f.render(v)
	if err != nil {
		f.cached = false
		return err
	}
	st, _, err := writeFile(f.path, func(w io.Writer) (int64, error) {
		n, err := w.Write(data)
		return int64(n), err
	})
	if err != nil {
		f.cached = false
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	f.cur, f.stamp, f.cached = v, st, true
	return nil
}

// read returns the file's content, from memory if the file was not
// replaced since it was read or written. f.mu is held.
func (f *sibling[T]) read() (T, error) {
	var zero T
	cur, err := statPath(f.path)
	if err != nil {
		return zero, err
	}
	if f.cached && cur == f.stamp {
		return f.cur, nil
	}
	data, st, err := readFile(f.path)
	if err != nil {
		return zero, err
	}
	v := f.empty()
	if st.exists {
		if v, err = f.parse(data); err != nil {
			return zero, &parseError{name: f.name, err: err}
		}
	}
	f.cur, f.stamp, f.cached = v, st, true
	return v, nil
}

// close closes the lock file, if it was opened; every later call returns
// ErrClosed.
func (f *sibling[T]) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	if f.lock == nil {
		return nil
	}
	return f.lock.Close()
}

// siblingPath returns the sibling file of the conversations file at path:
// its name with ".json" replaced by suffix, in the same folder.
func siblingPath(path, suffix string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, strings.TrimSuffix(base, ".json")+suffix)
}

// parseObject returns the top-level members of a sibling file, which must
// be a JSON object, as they are written.
func parseObject(data []byte) (map[string]json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, err
	}
	if members == nil {
		return nil, errors.New("not a JSON object")
	}
	return members, nil
}

// appendOther appends to b the top-level members of a sibling file that
// this version does not know, so that they are kept: sorted, each on a
// line of its own after a comma, compacted.
func appendOther(b []byte, other map[string]json.RawMessage) ([]byte, error) {
	for _, k := range slices.Sorted(maps.Keys(other)) {
		var v bytes.Buffer
		if err := json.Compact(&v, other[k]); err != nil {
			return nil, err
		}
		b = append(b, ",\n  "...)
		b = append(b, quote(k)...)
		b = append(b, ": "...)
		b = append(b, v.Bytes()...)
	}
	return b, nil
}

// parseError is the error of a file that does not parse, the only error
// that moves a file aside: one that cannot be read is left where it is.
type parseError struct {
	name string // the file's path, or how a person calls it
	err  error
}

func (e *parseError) Error() string { return e.name + " does not parse: " + e.err.Error() }
func (e *parseError) Unwrap() error { return e.err }

// moveAside renames the file at path to path + ".corrupt-<time>", or that
// name with "-2", "-3"... if an earlier corrupt file took it, and returns
// the new name. The file's lock is held.
func moveAside(path string) (string, error) {
	base := path + ".corrupt-" + time.Now().Format("20060102T150405.000000")
	aside := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s-%d", base, i)
	}
	return aside, os.Rename(path, aside)
}
