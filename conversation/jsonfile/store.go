package jsonfile

import (
	"context"
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
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/atomicfile"
)

var (
	_ conversation.Store   = (*Store)(nil)
	_ conversation.Sweeper = (*Store)(nil)
)

// ErrClosed is returned by every method of a closed store.
var ErrClosed = errors.New("jsonfile: store is closed")

// ErrCorrupt is wrapped by the errors of a read-only store (see
// Options.ReadOnly) whose file does not parse, or is empty. A store that
// may write moves such a file aside instead (see [Open]).
var ErrCorrupt = errors.New("conversations file does not parse")

// ErrReadOnly is returned by the methods that change conversations of a
// store opened with Options.ReadOnly.
var ErrReadOnly = errors.New("jsonfile: store is opened read-only")

// DefaultWarnSize is the file size above which a save logs a warning that it
// is time for another store: about 550 people with full 10-turn histories,
// where a save rewrites enough bytes to take 15-20 ms (see
// docs/benchmarks.md).
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
	// Logger receives repairs, corrupt files and size warnings; nil means
	// slog.Default().
	Logger *slog.Logger
	// WarnSize is the file size in bytes past which saves log a warning;
	// 0 means DefaultWarnSize, negative never warns.
	WarnSize int64
	// Location is the zone of the naive last_active times in the file;
	// nil means time.Local, as the original's datetime.now() used.
	Location *time.Location
	// MustExist makes Open fail, with an error wrapping fs.ErrNotExist and
	// without creating anything, when there is no file at the path. It is
	// for commands that only look at or remove conversations, so that a
	// mistyped path is reported instead of showing an empty store.
	MustExist bool
	// ReadOnly opens the file only to read it, for commands that only look
	// at conversations: like MustExist, nothing is created, not even the
	// lock file; temporary files are left alone; a file that does not
	// parse is reported, with an error wrapping ErrCorrupt, instead of
	// being moved aside; and the methods that change conversations, the
	// usage ledger or the recent messages return ErrReadOnly.
	ReadOnly bool
}

// noFileError is returned by Open with MustExist when there is no file.
type noFileError struct{ path string }

func (e noFileError) Error() string { return "no conversations file at " + e.path }
func (e noFileError) Unwrap() error { return fs.ErrNotExist }

// Store is the conversations.json store of the original design. It keeps
// the whole file in memory, each conversation once, as it is written in the
// file (about 1.1 times the file's size), and rewrites the file atomically
// on every change.
//
// A Store is safe for concurrent use by many goroutines, and several
// processes may open the same file: changes are ordered by a lock file next
// to it (path + ".lock"), and each operation first checks, with one stat,
// whether another process has written the file since, and reads it again if
// so. Reads do no other file I/O.
type Store struct {
	path   string
	loc    *time.Location
	log    *slog.Logger
	warnAt int64

	readOnly bool

	mu     sync.Mutex // guards everything below and orders this process's writers
	lock   *os.File   // the lock file, held open; flock orders processes; nil if readOnly
	st     *state     // never mutated in place: replaced on change
	stamp  stamp      // the version of the file st was read from or written as
	warned bool
	closed bool
	// orphans are the phones that only memory holds because the file
	// vanished or was moved aside, until a save writes them or they are
	// merged into a file another process wrote meanwhile; nil if none.
	orphans map[string]bool

	// The files beside the conversations (sibling.go): the usage ledger
	// (usage.go) and the recent messages (recent.go).
	usage  *sibling[*usageFile]
	recent *sibling[*recentFile]
}

// Open opens the store at path, creating its folder (mode 0700, synced so
// that it survives a power loss) if needed, unless opts.MustExist is set.
// A file that does not parse is moved aside to path + ".corrupt-<time>" with
// an error in the log, and the store starts empty; it is never overwritten.
// Turns that the Messages API would reject (a file edited by hand or written
// by an older version) are dropped with a warning giving their count.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.WarnSize == 0 {
		o.WarnSize = DefaultWarnSize
	}
	if path == "" {
		return nil, errors.New("jsonfile: open: empty path")
	}
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
	} else if err := atomicfile.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("jsonfile: open: %w", err)
	}
	if o.ReadOnly {
		s := &Store{path: path, loc: o.Location, log: o.Logger, warnAt: o.WarnSize, readOnly: true, st: newState(),
			usage: newUsage(path, o.Logger, true), recent: newRecent(path, o.Logger, true)}
		if err := s.refresh(true, false); err != nil {
			return nil, fmt.Errorf("jsonfile: open: %w", err)
		}
		return s, nil
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("jsonfile: open: %w", err)
	}
	s := &Store{path: path, loc: o.Location, log: o.Logger, warnAt: o.WarnSize, lock: lock, st: newState(),
		usage: newUsage(path, o.Logger, false), recent: newRecent(path, o.Logger, false)}
	if err := s.withFileLock(func() error {
		s.removeTemps()
		return s.refresh(true, true)
	}); err != nil {
		lock.Close()
		return nil, fmt.Errorf("jsonfile: open: %w", err)
	}
	return s, nil
}

// Path returns the file's path.
func (s *Store) Path() string { return s.path }

// withFileLock runs fn holding the lock file.
func (s *Store) withFileLock(fn func() error) error {
	if err := lockFile(s.lock); err != nil {
		return fmt.Errorf("lock %s: %w", s.lock.Name(), err)
	}
	defer unlockFile(s.lock)
	return fn()
}

// removeTemps deletes temporary files that a writer killed mid-save left
// behind. The caller holds the file lock, so no writer is using one.
func (s *Store) removeTemps() {
	if n, err := atomicfile.RemoveTemps(s.path); err != nil {
		s.log.Warn("cannot remove a temporary file left by an interrupted save", "path", s.path, "err", err)
	} else if n > 0 {
		s.log.Info("removed temporary files left by interrupted saves", "path", s.path, "count", n)
	}
}

// errNeedLock is returned by refresh when the file does not parse and the
// caller does not hold the file lock, which moving it aside needs.
var errNeedLock = errors.New("moving the file aside needs the file lock")

// testHookParseFailed, when set, runs after a refresh without the file lock
// found a file that does not parse.
var testHookParseFailed func()

// refresh reads the file again if it changed since s.st was read or
// written. s.mu is held; locked says whether the file lock is held too.
// A file that does not parse is moved aside only under the file lock, since
// another process may have just renamed a valid file into its place: without
// it refresh returns errNeedLock and the caller retries holding it.
//
// Memory is never emptied because the file went away: when the file
// vanishes or is moved aside after the store has used it, the conversations
// in memory are kept, served, and written back by the next save. If another
// process writes a new file first (which cannot hold them), the phones that
// only memory held then and that the new file lacks are merged into it once,
// and the result is written at once under the file lock. A file that fails
// to parse but is valid again by the time the lock is held lost nothing:
// it is taken as it is, so a conversation another process cleared meanwhile
// stays cleared.
func (s *Store) refresh(startup, locked bool) error {
	for attempt := 0; ; attempt++ {
		cur, err := statPath(s.path)
		if err != nil {
			return fmt.Errorf("stat: %w", err)
		}
		if cur == s.stamp && !startup {
			return nil
		}
		data, st, err := readFile(s.path)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if !st.exists {
			if s.stamp.exists {
				s.log.Error("conversations file vanished while in use; keeping the conversations in memory, the next save writes them back",
					"path", s.path, "conversations", len(s.st.order))
				s.orphan()
			}
			s.stamp = stamp{}
			return nil
		}
		parsed, rep, err := parse(data, s.loc)
		if s.readOnly {
			// Nothing is written, so there is nothing to merge or move.
			if err != nil {
				return fmt.Errorf("%s: %w: %v; mombot serve, ask or chat moves it aside and starts afresh", s.path, ErrCorrupt, err)
			}
			s.orphans = nil
			s.adopt(parsed, st, rep)
			return nil
		}
		if err == nil {
			if s.orphans == nil {
				s.adopt(parsed, st, rep)
				return nil
			}
			if !locked {
				return errNeedLock // the merge is written at once
			}
			return s.adoptOrphans(parsed, st, rep)
		}
		if !locked {
			if testHookParseFailed != nil {
				testHookParseFailed()
			}
			return errNeedLock
		}
		// Writers that ignore the lock file (the Python original, an
		// editor) may have replaced the file since it was read: move aside
		// only the version that failed to parse.
		if now, serr := statPath(s.path); serr != nil || now != st {
			if attempt < 3 {
				continue
			}
			return fmt.Errorf("%s does not parse (%v) and keeps changing", s.path, err)
		}
		aside, rerr := moveAside(s.path)
		if rerr != nil {
			return fmt.Errorf("%s does not parse (%v) and cannot be moved aside: %w", s.path, err, rerr)
		}
		s.log.Error("conversations file does not parse; moved it aside and kept it, starting from what is known",
			"path", s.path, "moved_to", aside, "err", err, "conversations_in_memory", len(s.st.order))
		// Nothing is at s.path now; what is in memory (nothing at start-up)
		// is written by the next save.
		s.orphan()
		s.stamp = stamp{}
		return nil
	}
}

// orphan records that every phone in memory is now held only there: the
// file that held them vanished or was moved aside.
func (s *Store) orphan() {
	if len(s.st.order) == 0 {
		return
	}
	if s.orphans == nil {
		s.orphans = make(map[string]bool, len(s.st.order))
	}
	for _, p := range s.st.order {
		s.orphans[p] = true
	}
}

// adoptOrphans adopts parsed, a file another process wrote while some
// phones were held only in memory, with those of them it lacks added, and
// writes the result at once. The file lock is held.
func (s *Store) adoptOrphans(parsed *state, st stamp, rep loadReport) error {
	n := 0
	for _, p := range s.st.order {
		if _, ok := parsed.entries[p]; s.orphans[p] && !ok {
			parsed.put(p, s.st.entries[p])
			n++
		}
	}
	if n > 0 {
		written, size, err := writeFile(s.path, func(w io.Writer) (int64, error) { return render(parsed, w) })
		if err != nil {
			return fmt.Errorf("write %s with the conversations only memory held: %w", s.path, err)
		}
		st = written
		s.checkSize(size, len(parsed.order))
		s.log.Warn("a new conversations file appeared while conversations were only in memory; added those it lacked and wrote it",
			"path", s.path, "conversations_added", n)
	}
	s.orphans = nil
	s.adopt(parsed, st, rep)
	return nil
}

// adopt makes parsed, read from the file version st, the current state.
func (s *Store) adopt(parsed *state, st stamp, rep loadReport) {
	s.st, s.stamp = parsed, st
	if rep.droppedTurns > 0 {
		s.log.Warn("conversations file held turns the Messages API would reject; dropped them",
			"path", s.path, "dropped_turns", rep.droppedTurns, "conversations", rep.phones)
	}
	if rep.badTimes > 0 {
		s.log.Warn("conversations file held unreadable last_active times; those conversations count as expired and their last_active is written back as it was",
			"path", s.path, "conversations", rep.badTimes)
	}
	if rep.systemEntries > 0 {
		s.log.Warn(`conversations file held a conversation for the "system" sender; it is not loaded`, "path", s.path)
	}
}

// read runs fn on the current state, fresh from the file if another
// process changed it.
func (s *Store) read(ctx context.Context, fn func(*state) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	err := s.refresh(false, false)
	if errors.Is(err, errNeedLock) {
		err = s.withFileLock(func() error { return s.refresh(false, true) })
	}
	if err != nil {
		return err
	}
	return fn(s.st)
}

// errUnchanged tells update that fn changed nothing and nothing is written.
var errUnchanged = errors.New("unchanged")

// update applies fn to a copy of the current state under both locks and
// writes the result. The in-memory state changes only if the write
// succeeded, so memory never holds what the file does not.
func (s *Store) update(ctx context.Context, fn func(*state) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.readOnly {
		return ErrReadOnly
	}
	return s.withFileLock(func() error {
		if err := s.refresh(false, true); err != nil {
			return err
		}
		next := s.st.clone()
		if err := fn(next); err != nil {
			if errors.Is(err, errUnchanged) {
				return nil
			}
			return err
		}
		st, size, err := writeFile(s.path, func(w io.Writer) (int64, error) { return render(next, w) })
		if err != nil {
			return fmt.Errorf("write %s: %w", s.path, err)
		}
		s.st, s.stamp, s.orphans = next, st, nil
		s.checkSize(size, len(next.order))
		return nil
	})
}

func (s *Store) checkSize(size int64, phones int) {
	if s.warnAt < 0 {
		return
	}
	if size > s.warnAt && !s.warned {
		s.log.Warn("conversations file is large: every save rewrites it whole; switch to the sqlite store (mombot history migrate)",
			"path", s.path, "bytes", size, "conversations", phones, "warn_size", s.warnAt)
	}
	s.warned = size > s.warnAt
}

// Load implements [conversation.Store].
func (s *Store) Load(ctx context.Context, phone string) (conversation.Conversation, error) {
	var c conversation.Conversation
	err := s.read(ctx, func(st *state) error {
		e, ok := st.entries[phone]
		if !ok || e.raw != nil {
			return conversation.ErrNotFound
		}
		turns, err := e.turns()
		if err != nil {
			return err
		}
		c = conversation.Conversation{Phone: phone, LastActive: e.lastActive, Turns: turns}
		return nil
	})
	if err != nil {
		return conversation.Conversation{}, fmt.Errorf("jsonfile: load: %w", err)
	}
	return c, nil
}

// Append implements [conversation.Store].
func (s *Store) Append(ctx context.Context, phone string, turn conversation.Turn, now time.Time, lim conversation.Limits) error {
	now = now.Truncate(time.Microsecond) // the file's precision
	err := s.update(ctx, func(st *state) error {
		e := &entry{lastActive: now}
		turns := []conversation.Turn{turn}
		if old, ok := st.entries[phone]; ok && old.raw == nil {
			if ids := turn.ToolUseIDs(); len(ids) > 0 && old.ids != nil {
				var inUse []string
				for _, own := range old.ids[old.nturns-conversation.KeptTurns(old.nturns, old.lastActive, now, lim):] {
					inUse = append(inUse, own...)
				}
				if err := conversation.CheckToolIDs(ids, inUse); err != nil {
					return err
				}
			}
			oldTurns, err := old.turns()
			if err != nil {
				return err
			}
			e.extra = old.extra
			turns = conversation.AppendTurn(oldTurns, old.lastActive, turn, now, lim)
		}
		if err := e.encode(turns, s.loc); err != nil {
			return err
		}
		st.put(phone, e)
		return nil
	})
	if err != nil {
		return fmt.Errorf("jsonfile: append: %w", err)
	}
	return nil
}

// Delete implements [conversation.Store].
func (s *Store) Delete(ctx context.Context, phone string) error {
	err := s.update(ctx, func(st *state) error {
		if e, ok := st.entries[phone]; !ok || e.raw != nil {
			return conversation.ErrNotFound
		}
		st.remove(phone)
		return nil
	})
	if err != nil {
		return fmt.Errorf("jsonfile: delete: %w", err)
	}
	return nil
}

// Expire implements [conversation.Store].
func (s *Store) Expire(ctx context.Context, phone string, cutoff time.Time) error {
	err := s.update(ctx, func(st *state) error {
		e, ok := st.entries[phone]
		if !ok || e.raw != nil || e.lastActive.After(cutoff) {
			return errUnchanged
		}
		st.remove(phone)
		return nil
	})
	if err != nil {
		return fmt.Errorf("jsonfile: expire: %w", err)
	}
	return nil
}

// Sweep implements [conversation.Sweeper]: it deletes, in one write, every
// conversation last active at or before cutoff.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	n := 0
	err := s.update(ctx, func(st *state) error {
		n = 0
		for _, p := range slices.Clone(st.order) {
			if e := st.entries[p]; e.raw == nil && !e.lastActive.After(cutoff) {
				st.remove(p)
				n++
			}
		}
		if n == 0 {
			return errUnchanged
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("jsonfile: sweep: %w", err)
	}
	return n, nil
}

// List implements [conversation.Store].
func (s *Store) List(ctx context.Context) ([]conversation.Summary, error) {
	var out []conversation.Summary
	err := s.read(ctx, func(st *state) error {
		out = make([]conversation.Summary, 0, len(st.order))
		for _, p := range st.order {
			if e := st.entries[p]; e.raw == nil {
				out = append(out, conversation.Summary{Phone: p, LastActive: e.lastActive, Turns: e.nturns})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jsonfile: list: %w", err)
	}
	slices.SortFunc(out, func(a, b conversation.Summary) int { return strings.Compare(a.Phone, b.Phone) })
	return out, nil
}

// Close implements [conversation.Store]. Every change is already on disk.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.lock != nil { // read-only stores take no lock
		err = s.lock.Close()
	}
	return errors.Join(err, s.usage.close(), s.recent.close())
}
