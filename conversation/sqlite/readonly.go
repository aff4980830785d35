package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ErrReadOnlyStore is wrapped by the errors of the methods that write, on a
// store opened with [Options].ReadOnly.
var ErrReadOnlyStore = errors.New("the store is opened read-only")

// ErrCorrupt is wrapped by the errors of a store opened with
// [Options].ReadOnly whose file is not an SQLite database, or is damaged.
// The file is left as it is.
var ErrCorrupt = errors.New("the database is damaged or is not an SQLite database")

// ErrSchemaTooOld is returned by [Open] with [Options].ReadOnly when the
// database was written by a version of this program whose schema is older
// than the reads need (before schema version 5), or holds no tables of it
// yet: a read-only store runs no
// migrations. Opening it once without ReadOnly upgrades it.
var ErrSchemaTooOld = errors.New("database schema is older than this program")

// readableFrom is the oldest schema version a read-only store reads as it
// is: the reads find every table and column they use from version 5 on
// (0006 added turn_ids, which only saves read and write), so a database
// the previous release wrote can be listed and shown before a writing
// command upgrades it. A migration that changes what a read uses must
// raise it.
const readableFrom = 5

// Primary result codes that a read-only store explains or works around.
const (
	codeCorrupt  = 11 // SQLITE_CORRUPT
	codeNotADB   = 26 // SQLITE_NOTADB
	codeCantOpen = 14 // SQLITE_CANTOPEN

	// Extended codes of a connection that would have to write the -shm
	// (https://www.sqlite.org/rescode.html): SQLITE_READONLY_RECOVERY,
	// SQLITE_READONLY_CANTLOCK.
	codeReadOnlyRecovery = 8 | 1<<8
	codeReadOnlyCantLock = 8 | 2<<8
)

// A read-only store chooses for each operation how to read, from the files
// next to the database:
//
//   - With a -wal file holding frames (a writer has the database open, or
//     one crashed), or a -journal, it opens the database with mode=ro and
//     readonly_shm=1. SQLite then reads the committed state the writer left
//     in the -wal through the -shm, taking the shared locks that keep it
//     consistent, and writes neither file: where no writer keeps the -shm
//     up to date it builds a private copy of it in memory
//     (SQLITE_READONLY_CANTINIT).
//   - Without one, the whole database is in the main file, and it opens
//     it with immutable=1, so that SQLite neither locks nor creates the -wal
//     and -shm that a mode=ro connection would create (and, having no write
//     access, leave behind). immutable means that nothing watches for a
//     writer, so the operation's result counts only if the database file
//     and its companions are as they were before it: else it is run again,
//     in whichever way the files then call for. These connections take no
//     locks, so they are kept open for the next operations while the files
//     stay as they were, which makes a load cost about what it costs a
//     writable store (BenchmarkReadOnlyLoad). The connections that read
//     through the -wal are not kept: an open one holds a shared lock on
//     the database, which would keep a writer that closes from removing its
//     -wal and -shm; opening one costs a load about 0.15 ms more.
//
// "As they were" is the same file (inode), size and modification time,
// for the database and each companion. A writer that started, committed
// and closed again within one read would change the database's
// modification time, unless it did all that within the file system's
// timestamp granularity of the previous change (a few milliseconds where
// the kernel uses its coarse clock).
//
// The one case left: a writer that closes at the instant a read-only
// operation starts, between the look at the files and SQLite's shared
// lock, removes the -wal and -shm; the operation's connection then
// recreates the -wal, empty, finds no -shm and fails with SQLITE_CANTOPEN,
// and the operation reads again from the main file. SQLite ignores an
// empty -wal, and the next writer removes it. Removing it here could
// remove a writer's that was just created instead.
//
// Within one process, SQLite shares one mapping of the -shm among all the
// connections to a database: a read-only store that maps it first makes a
// writable store's writes in the same process fail with SQLITE_READONLY
// until the read ends. mombot never opens one database both ways in one
// process (history migrate refuses the same store as source and target).

// maxViews bounds the times a read-only operation starts again because the
// database changed under it: each such change is a writer starting, after
// which the next attempt reads through the -wal.
const maxViews = 5

// testHookRead, if set, is called after each read-only attempt, with
// whether it read through the -wal: tests change the database there.
var testHookRead func(live bool)

// reader opens the read-only connections of a store.
type reader struct {
	path string // absolute
	name string // the path as given, for messages
	busy time.Duration

	mu     sync.Mutex // guards the fields below
	still  *stillDB   // the immutable pool, nil until used or after a change
	closed bool
}

// errClosed is returned by the operations of a closed read-only store.
var errClosed = errors.New("the store is closed")

// companion is one of the database's files as a stat saw it.
type companion struct {
	ok   bool
	info os.FileInfo
}

func (c companion) size() int64 {
	if !c.ok {
		return 0
	}
	return c.info.Size()
}

// same reports whether c and d are one state of one file (or both absent).
func (c companion) same(d companion) bool {
	if c.ok != d.ok {
		return false
	}
	return !c.ok || os.SameFile(c.info, d.info) && c.info.Size() == d.info.Size() && c.info.ModTime().Equal(d.info.ModTime())
}

// files is the database and its companions at one moment.
type files struct{ db, wal, shm, journal companion }

func (f files) same(g files) bool {
	return f.db.same(g.db) && f.wal.same(g.wal) && f.shm.same(g.shm) && f.journal.same(g.journal)
}

// live reports whether the database's latest state may be outside its main
// file: in the frames of a -wal, or behind a -journal.
func (f files) live() bool {
	return f.wal.ok && (f.wal.size() > 0 || f.shm.ok) || f.journal.ok
}

// stat looks at the database's files, without opening them: closing a
// descriptor of the database would drop this process's SQLite locks on it.
func (r *reader) stat() (files, error) {
	var f files
	for _, c := range []struct {
		suffix string
		to     *companion
	}{{"", &f.db}, {"-wal", &f.wal}, {"-shm", &f.shm}, {"-journal", &f.journal}} {
		fi, err := os.Stat(r.path + c.suffix)
		switch {
		case err == nil:
			*c.to = companion{ok: true, info: fi}
		case errors.Is(err, fs.ErrNotExist):
		default:
			return files{}, err
		}
	}
	if !f.db.ok {
		return files{}, noDatabaseError{r.name}
	}
	if !f.db.info.Mode().IsRegular() {
		return files{}, fmt.Errorf("%s is not a regular file", r.name)
	}
	return f, nil
}

// noDatabaseError says that there is no database at a read-only store's
// path.
type noDatabaseError struct{ path string }

func (e noDatabaseError) Error() string { return "no database at " + e.path }
func (e noDatabaseError) Unwrap() error { return fs.ErrNotExist }

// dsn returns the driver's name for a read-only connection: a URI, so
// that SQLite reads mode, readonly_shm and immutable; the driver reads the
// parameters that start with '_' and SQLite ignores them.
func (r *reader) dsn(live bool) string {
	u := (&url.URL{Scheme: "file", Path: r.path}).String()
	if live {
		return fmt.Sprintf("%s?mode=ro&readonly_shm=1&_pragma=busy_timeout(%d)&_pragma=query_only(1)", u, r.busy.Milliseconds())
	}
	return u + "?mode=ro&immutable=1&_pragma=query_only(1)"
}

// view runs fn on a connection that sees the database's latest committed
// state, and creates or changes no file. fn must only read, and may run
// more than once.
func (r *reader) view(ctx context.Context, fn func(db *sql.DB) error) error {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return errClosed
	}
	deadline := time.Now().Add(r.busy)
	pause := time.Millisecond
	for changes := 0; changes < maxViews; {
		before, err := r.stat()
		if err != nil {
			return err
		}
		if before.live() {
			err = r.runLive(fn)
			if testHookRead != nil {
				testHookRead(true)
			}
			switch c := extendedCode(err); {
			case c&0xff == codeCantOpen:
				// The writer closed, removing its -wal and -shm, as
				// this connection opened (see the race above): read
				// again, from the main file.
				after, serr := r.stat()
				if serr == nil && !before.same(after) {
					changes++
					continue
				}
				if serr == nil && after.wal.size() > 0 && !after.shm.ok {
					return fmt.Errorf("%s-wal holds commits but %s-shm is missing, so they cannot be read without writing; a command that writes (mombot serve, ask, chat or history clear) recovers them: %w", r.name, r.name, err)
				}
			case (c == codeReadOnlyRecovery || c == codeReadOnlyCantLock) && time.Now().Before(deadline):
				// The -shm is being set up or recovered by a writer
				// that has just opened the database; this connection
				// may not do it, having it read-only. Wait as SQLite's
				// busy handler would.
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(pause):
				}
				pause = min(2*pause, 50*time.Millisecond)
				continue
			}
			return r.plain(err)
		}
		h, err := r.acquire(before)
		if err != nil {
			return err
		}
		err = fn(h.db)
		if testHookRead != nil {
			testHookRead(false)
		}
		after, serr := r.stat()
		same := serr == nil && before.same(after)
		r.release(h, !same)
		switch {
		case serr != nil:
			return serr
		case same:
			return r.plain(err)
		}
		// A writer changed the database while this connection, which
		// takes no locks, read it.
		if err := ctx.Err(); err != nil {
			return err
		}
		changes++
	}
	return fmt.Errorf("%s changed under every one of %d attempts to read it", r.name, maxViews)
}

// runLive opens a connection that reads through the -wal, runs fn on it
// and closes it, so that no such connection outlives an operation: an open
// one would keep a writer that closes from removing its -wal and -shm.
func (r *reader) runLive(fn func(db *sql.DB) error) error {
	db, err := sql.Open("sqlite", r.dsn(true))
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	err = fn(db)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// stillDB is a pool of immutable=1 connections to the database as it was
// at one state of its files. They take no locks, so they may stay open
// between operations, and are used while the files stay as they were.
type stillDB struct {
	db    *sql.DB
	at    files
	users int  // operations using it
	stale bool // the files changed: close it when users is 0
}

// acquire returns the immutable pool for the files' state at, opening a
// new one if the current one is of another state. The caller releases it.
func (r *reader) acquire(at files) (*stillDB, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	if r.still != nil && !r.still.at.same(at) {
		r.drop(r.still)
	}
	if r.still == nil {
		db, err := sql.Open("sqlite", r.dsn(false))
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(maxConns)
		db.SetMaxIdleConns(maxConns)
		r.still = &stillDB{db: db, at: at}
	}
	r.still.users++
	return r.still, nil
}

// release ends an operation's use of h; changed says that the files
// changed during it, so h no longer reads them as they are.
func (r *reader) release(h *stillDB, changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h.users--
	if changed && r.still == h {
		r.drop(h)
	}
	if h.stale && h.users == 0 {
		h.db.Close()
	}
}

// drop retires the current pool; it is closed when no operation uses it.
// The caller holds r.mu.
func (r *reader) drop(h *stillDB) {
	h.stale = true
	if h.users == 0 {
		h.db.Close()
	}
	r.still = nil
}

// close closes the pool; operations still running finish on it.
func (r *reader) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.still != nil {
		r.drop(r.still)
	}
}

// extendedCode returns the SQLite extended result code of err, or 0.
func extendedCode(err error) int {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return 0
	}
	return coded.Code()
}

// code returns the SQLite primary result code of err, or 0.
func code(err error) int { return extendedCode(err) & 0xff }

// plain says what a driver error means: a damaged file wraps ErrCorrupt.
func (r *reader) plain(err error) error {
	switch code(err) {
	case codeNotADB:
		return &plainError{plain: ErrCorrupt, err: err,
			advice: fmt.Sprintf("%s is not an SQLite database; it was left as it is, and mombot serve would refuse it too", r.name)}
	case codeCorrupt:
		return &plainError{plain: ErrCorrupt, err: err,
			advice: fmt.Sprintf("%s is damaged; it was left as it is. Stop mombot, keep a copy of the file and its -wal, and try the sqlite3 command's .recover", r.name)}
	}
	return plain(r.name, err)
}

// openReadOnly opens the store at path for reading only; see
// Options.ReadOnly.
func openReadOnly(path string, o Options) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	r := &reader{path: abs, name: path, busy: o.BusyTimeout}
	ctx, cancel := context.WithTimeout(context.Background(), o.BusyTimeout+10*time.Second)
	defer cancel()
	var version, tables, versioned int
	err = r.view(ctx, func(db *sql.DB) error {
		version = 0
		err := db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(type = 'table' AND name = 'schema_version'), 0) FROM sqlite_schema`).Scan(&tables, &versioned)
		if err != nil || versioned == 0 {
			return err
		}
		err = db.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&version)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	switch {
	case version > len(migrations):
		return nil, fmt.Errorf("sqlite: open %s: %w: it was written by a newer mombot (schema version %d; this one knows up to %d), so read it with that version or a later one",
			path, ErrSchemaTooNew, version, len(migrations))
	case version == 0 && tables == 0:
		return nil, fmt.Errorf("sqlite: open %s: %w: the database is empty, no mombot has saved to it yet; a command that writes (mombot serve, ask, chat or history clear) creates its tables",
			path, ErrSchemaTooOld)
	case version == 0:
		return nil, fmt.Errorf("sqlite: open %s: %w: the database has no mombot tables (another program's?); a command that writes (mombot serve, ask, chat or history clear) would add them",
			path, ErrSchemaTooOld)
	case version < readableFrom:
		return nil, fmt.Errorf("sqlite: open %s: %w: it was written by an older mombot (schema version %d; this one reads %d and later). A command that writes (mombot serve, ask, chat or history clear) upgrades it when it opens it; read-only commands never change it",
			path, ErrSchemaTooOld, version, readableFrom)
	}
	return &Store{path: path, ro: r, log: o.Logger}, nil
}

// reading runs fn, which only reads, on the store's database: its pool, or
// for a read-only store a connection of its own (see reader.view).
func (s *Store) reading(ctx context.Context, fn func(db *sql.DB) error) error {
	if s.ro != nil {
		return s.ro.view(ctx, fn)
	}
	return fn(s.db)
}

// writable returns ErrReadOnlyStore if the store is read-only.
func (s *Store) writable() error {
	if s.ro != nil {
		return ErrReadOnlyStore
	}
	return nil
}
