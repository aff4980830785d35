package jsonfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/atomicfile"
)

var _ conversation.Store = (*Store)(nil)

// ErrClosed is returned by every method of a closed store.
var ErrClosed = errors.New("jsonfile: store is closed")

// ErrCorrupt is wrapped by the errors of a read-only store (see
// Options.ReadOnly) whose file does not parse, or is empty. A store that
// may write moves such a file aside instead.
var ErrCorrupt = errors.New("file does not parse")

// DefaultWarnSize is the size of a file past which a write logs a warning
// that it is time for another store (see docs/memory.md).
const DefaultWarnSize = 8 << 20

// DockerDataDir is the data folder of the original's container image; where
// it exists, [DefaultPath] puts the file there.
const DockerDataDir = "/app/data"

// DefaultPath returns the original design's file path:
// /app/data/conversations.json where /app/data exists, else
// data/conversations.json relative to the working folder.
func DefaultPath() string { return defaultPathIn(DockerDataDir) }

// defaultPathIn is DefaultPath with the container's data folder at dockerDir.
func defaultPathIn(dockerDir string) string {
	if fi, err := os.Stat(dockerDir); err == nil && fi.IsDir() {
		return filepath.Join(dockerDir, "conversations.json")
	}
	return filepath.Join("data", "conversations.json")
}

// Options configure a [Store]. The zero value means the defaults.
type Options struct {
	// Logger receives files moved aside, leftover temporary files removed
	// and size warnings; nil means slog.Default().
	Logger *slog.Logger
	// WarnSize is the size in bytes of a file past which writes log a
	// warning; 0 means DefaultWarnSize, negative never warns.
	WarnSize int64
	// MustExist makes Open fail, with an error wrapping fs.ErrNotExist and
	// without creating anything, when there is no file at the path: for
	// commands that only look at or remove conversations, so that a
	// mistyped path is reported instead of showing an empty store.
	MustExist bool
	// ReadOnly opens the files only to read them. It implies MustExist;
	// nothing is created, not even the lock file, and nothing is removed
	// or moved; a file that does not parse is an error wrapping
	// ErrCorrupt; Put and Delete return an error wrapping
	// conversation.ErrReadOnly.
	ReadOnly bool
}

// noFileError is returned by Open with MustExist when there is no file.
type noFileError struct{ path string }

func (e noFileError) Error() string { return "no conversations file at " + e.path }
func (e noFileError) Unwrap() error { return fs.ErrNotExist }

// Store is a [conversation.Store] on JSON files: conversations.json for the
// conversations and a file beside it for each other kind (see the package
// doc). It is safe for concurrent use, also by several processes on the
// same files.
type Store struct {
	path     string // the conversations file
	log      *slog.Logger
	warnAt   int64
	readOnly bool

	mu     sync.Mutex // guards the fields below and orders this process's calls
	lock   *os.File   // the lock file, held open; nil if read-only
	files  map[conversation.Kind]*file
	closed bool
}

// Open opens the store whose conversations file is at path. Unless
// opts.MustExist or opts.ReadOnly is set it creates the file's folder (mode
// 0700, synced so that it survives a power loss) if needed. A store that
// may write removes the temporary files that saves killed mid-write left
// behind, and moves a conversations file that does not parse aside.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.WarnSize == 0 {
		o.WarnSize = DefaultWarnSize
	}
	if path == "" {
		return nil, errors.New("jsonfile: open: empty path")
	}
	s := &Store{path: path, log: o.Logger, warnAt: o.WarnSize, readOnly: o.ReadOnly, files: map[conversation.Kind]*file{}}
	if o.MustExist || o.ReadOnly {
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("jsonfile: open: %w", noFileError{path})
		case err != nil:
			return nil, fmt.Errorf("jsonfile: open: %w", err)
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("jsonfile: open: %s is not a regular file", path)
		}
	}
	if !o.ReadOnly {
		if err := atomicfile.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("jsonfile: open: %w", err)
		}
		lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("jsonfile: open: %w", err)
		}
		s.lock = lock
	}
	err := s.locked(func() error {
		if !s.readOnly {
			s.removeTemps()
		}
		_, err := s.load(conversation.Conversations, true)
		return err
	})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("jsonfile: open: %w", err)
	}
	return s, nil
}

// Get implements [conversation.Store].
func (s *Store) Get(ctx context.Context, kind conversation.Kind, key string) (conversation.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read(ctx, kind)
	if err != nil {
		return conversation.Record{}, fmt.Errorf("jsonfile: get %s %q: %w", kind, key, err)
	}
	r, ok := f.recs[key]
	if !ok {
		return conversation.Record{}, fmt.Errorf("jsonfile: get %s %q: %w", kind, key, conversation.ErrNotFound)
	}
	return conversation.Record{Key: key, Data: bytes.Clone(r.data), Version: r.version}, nil
}

// Put implements [conversation.Store]. The version is a hash of the data,
// so a Put of the bytes already stored keeps their version, which no
// writer can tell from a write of another value. keep is ignored: records
// stay until they are deleted.
func (s *Store) Put(ctx context.Context, kind conversation.Kind, rec conversation.Record, _ time.Duration) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	version := versionOf(rec.Data)
	err := s.write(ctx, kind, func(f *file) error {
		switch {
		case rec.Key == "" || len(rec.Key) > conversation.MaxKeyLen || !utf8.ValidString(rec.Key):
			return fmt.Errorf("a key must be 1 to %d bytes of UTF-8", conversation.MaxKeyLen)
		case !json.Valid(rec.Data):
			return errors.New("the data is not one JSON value")
		case f.recs[rec.Key].version != rec.Version:
			return conversation.ErrConflict
		}
		f.recs[rec.Key] = record{data: bytes.Clone(rec.Data), version: version}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("jsonfile: put %s %q: %w", kind, rec.Key, err)
	}
	return version, nil
}

// Delete implements [conversation.Store].
func (s *Store) Delete(ctx context.Context, kind conversation.Kind, key string, version int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.write(ctx, kind, func(f *file) error {
		r, ok := f.recs[key]
		switch {
		case !ok:
			return conversation.ErrNotFound
		case version != 0 && r.version != version:
			return conversation.ErrConflict
		}
		delete(f.recs, key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("jsonfile: delete %s %q: %w", kind, key, err)
	}
	return nil
}

// List implements [conversation.Store].
func (s *Store) List(ctx context.Context, kind conversation.Kind, prefix string) ([]conversation.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read(ctx, kind)
	if err != nil {
		return nil, fmt.Errorf("jsonfile: list %s %q: %w", kind, prefix, err)
	}
	var out []conversation.Record
	for key, r := range f.recs {
		if strings.HasPrefix(key, prefix) {
			out = append(out, conversation.Record{Key: key, Data: bytes.Clone(r.data), Version: r.version})
		}
	}
	slices.SortFunc(out, func(a, b conversation.Record) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Scrub implements [conversation.Store]. Every change replaces its file
// whole, and the old file is unlinked, so no file of the store keeps a
// deleted record's bytes; a damaged file moved aside (".corrupt-<time>")
// is the person's to delete.
func (s *Store) Scrub(context.Context) error { return nil }

// Close implements [conversation.Store]. Every change is already on disk.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	for _, f := range s.files {
		err = errors.Join(err, f.close())
	}
	if s.lock != nil {
		err = errors.Join(err, s.lock.Close())
	}
	return err
}

// read returns kind's file, read again if it changed. s.mu is held.
func (s *Store) read(ctx context.Context, kind conversation.Kind) (*file, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed {
		return nil, ErrClosed
	}
	return s.load(kind, false)
}

// write applies change to kind's file, read afresh under the lock file,
// and writes the file if change returns nil. Memory holds only what the
// file holds: when the write fails, the file is read again next time.
// s.mu is held.
func (s *Store) write(ctx context.Context, kind conversation.Kind, change func(*file) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case s.closed:
		return ErrClosed
	case s.readOnly:
		return conversation.ErrReadOnly
	}
	return s.locked(func() error {
		f, err := s.load(kind, true)
		if err != nil {
			return err
		}
		if err := change(f); err != nil {
			return err
		}
		if err := s.save(f); err != nil {
			f.forget()
			return err
		}
		return nil
	})
}

// locked runs fn holding the lock file, which orders the writers of every
// process; a read-only store, which has none, runs fn at once.
func (s *Store) locked(fn func() error) error {
	if s.lock == nil {
		return fn()
	}
	// Go's signal handlers restart an interrupted flock(2).
	if err := syscall.Flock(int(s.lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", s.lock.Name(), err)
	}
	defer syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
	return fn()
}

// testHookParseFailed, when set, runs when a read without the lock file
// finds a file that does not parse, before it takes the lock.
var testHookParseFailed func()

// load returns kind's file, read again if it changed since it was last
// read or written. s.mu is held; locked says whether the lock file is too.
// A file that does not parse is moved aside, only under the lock file (a
// valid file another process has just renamed into its place must not go
// instead), and the store starts that kind anew; a read-only store
// reports it instead.
func (s *Store) load(kind conversation.Kind, locked bool) (*file, error) {
	f := s.files[kind]
	if f == nil {
		path, err := s.pathOf(kind)
		if err != nil {
			return nil, err
		}
		f = &file{path: path}
		s.files[kind] = f
	}
	if f.current() {
		return f, nil
	}
	err := f.read()
	switch {
	case err == nil:
		return f, nil
	case !errors.Is(err, ErrCorrupt):
		return nil, err
	case s.readOnly:
		return nil, fmt.Errorf("%w; a command that writes (mombot serve, ask or chat) moves it aside and starts anew", err)
	}
	if !locked {
		if testHookParseFailed != nil {
			testHookParseFailed()
		}
		if err := s.locked(func() error { _, err := s.load(kind, true); return err }); err != nil {
			return nil, err
		}
		return f, nil
	}
	aside, merr := moveAside(f.path)
	if merr != nil {
		return nil, fmt.Errorf("%w, and it cannot be moved aside: %w", err, merr)
	}
	s.log.Error("jsonfile: a file of the store does not parse; moved it aside and kept it, starting that file anew",
		"path", f.path, "moved_to", aside, "err", err)
	f.empty()
	return f, nil
}

// save writes f's records to its file. The lock file is held.
func (s *Store) save(f *file) error {
	if err := atomicfile.Write(f.path, func(w io.Writer) error { return render(w, f.recs) }); err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	f.reopen()
	big := s.warnAt > 0 && f.stamp.size > s.warnAt
	if big && !f.warned {
		s.log.Warn("jsonfile: the file is large and every write rewrites it whole; switch to the sqlite store (mombot history migrate)",
			"path", f.path, "bytes", f.stamp.size, "records", len(f.recs), "warn_size", s.warnAt)
	}
	f.warned = big
	return nil
}

// pathOf returns the file of kind: the conversations file, or a file
// beside it named after kind, conversations.<kind>.json.
func (s *Store) pathOf(kind conversation.Kind) (string, error) {
	if kind == conversation.Conversations {
		return s.path, nil
	}
	if kind == "" || strings.Trim(string(kind), "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		return "", fmt.Errorf("kind %q: want lower-case letters, digits, - and _", kind)
	}
	return s.stem() + "." + string(kind) + ".json", nil
}

// stem is the conversations file's path without ".json".
func (s *Store) stem() string { return strings.TrimSuffix(s.path, ".json") }

// removeTemps deletes the temporary files that writers killed mid-write
// left behind, of every kind's file (atomicfile.TempPrefix). The lock file
// is held, so no writer is using one.
func (s *Store) removeTemps() {
	dir, base := filepath.Split(s.path)
	sibling := "." + filepath.Base(s.stem()) + "."
	entries, err := os.ReadDir(filepath.Dir(s.path))
	removed := 0
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, atomicfile.TempPrefix(base)) && !(strings.HasPrefix(n, sibling) && strings.Contains(n, ".json.tmp-")) {
			continue
		}
		if rerr := os.Remove(filepath.Join(dir, n)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
			continue
		}
		removed++
	}
	if err != nil {
		s.log.Warn("jsonfile: cannot remove a temporary file left by an interrupted write", "path", s.path, "err", err)
	}
	if removed > 0 {
		s.log.Info("jsonfile: removed temporary files left by interrupted writes", "path", s.path, "count", removed)
	}
}
