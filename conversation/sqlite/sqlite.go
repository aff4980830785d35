package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mombot/mombot/conversation"
)

var (
	_ conversation.Store   = (*Store)(nil)
	_ conversation.Sweeper = (*Store)(nil)
)

// DefaultBusyTimeout is how long a statement waits for a lock held by another
// connection or process when [Options].BusyTimeout is zero.
const DefaultBusyTimeout = 5 * time.Second

// maxConns bounds the connections of one Store. Reads run in parallel on
// them (WAL readers do not block each other or the writer); writes take
// turns anyway, see Store.write.
const maxConns = 8

// Options configure [Open]. The zero value means the defaults.
type Options struct {
	// Logger receives the turns dropped as invalid on load; nil means
	// slog.Default().
	Logger *slog.Logger
	// BusyTimeout is how long a statement waits for a lock that another
	// process holds before it fails; 0 means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// ReadOnly opens the database only to read it, for commands that only
	// look at conversations or usage, while a server may be writing: a
	// missing database is an error wrapping fs.ErrNotExist; no file is
	// created or changed, not even the -wal and -shm; no migration runs,
	// so a database of an older schema is an error wrapping
	// ErrSchemaTooOld (and of a newer one, ErrSchemaTooNew); a file that
	// is not a database or is damaged is an error wrapping ErrCorrupt; and
	// the methods that write return errors wrapping ErrReadOnlyStore.
	// Every read sees the latest committed state, also while another
	// process writes.
	ReadOnly bool
}

// Store is a [conversation.Store] on an SQLite database file. It is safe for
// concurrent use by many goroutines, and by several processes that open the
// same file. Use [Open] to make one.
type Store struct {
	path string
	db   *sql.DB // nil if ro is set
	ro   *reader // set for a read-only store
	log  *slog.Logger
	// load is queryLoad prepared once, and prepared the statements of a
	// save: a load or a save is short enough that preparing its statements
	// each time is a good part of its cost.
	load     *sql.Stmt
	prepared map[string]*sql.Stmt

	// write is a one-slot semaphore held around every write. SQLite
	// allows one writer per file anyway; queueing this process's writers
	// here, where a context can end the wait, leaves the busy timeout to
	// contention with other processes.
	write chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Open opens the database at path, creating it with mode 0600 if it does not
// exist, and brings its schema up to date. It fails if the schema is newer
// than this program knows. With [Options].ReadOnly it creates and changes
// nothing; see there. The caller must [Store.Close] the store.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case path == "":
		return nil, errors.New("sqlite: open: empty path")
	case strings.ContainsAny(path, "?#"):
		// The driver reads what follows '?' as connection parameters.
		return nil, fmt.Errorf("sqlite: open %s: path must not contain '?' or '#'", path)
	case o.BusyTimeout < 0:
		return nil, errors.New("sqlite: open: negative busy timeout")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.ReadOnly {
		return openReadOnly(path, o)
	}

	// SQLite creates a database with mode 0644 less the umask, and gives
	// the -wal and -shm files the mode of the database. Creating the file
	// first makes all three private.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}

	db, err := sql.Open("sqlite", dsn(path, o.BusyTimeout))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, plain(path, err))
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)

	ctx, cancel := context.WithTimeout(context.Background(), o.BusyTimeout+10*time.Second)
	defer cancel()
	if err := migrate(ctx, db, migrations); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, plain(path, err))
	}

	s := &Store{path: path, db: db, log: o.Logger, prepared: map[string]*sql.Stmt{}, write: make(chan struct{}, 1)}
	for _, q := range preparedQueries {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, plain(path, err))
		}
		s.prepared[q] = st
	}
	s.load = s.prepared[queryLoad]
	return s, nil
}

// dsn returns the driver's name for the database at path with the settings
// every connection needs: WAL, so that readers and the writer do not block
// each other; synchronous=FULL, so that a committed turn survives a power
// cut (WAL's usual NORMAL may lose the last commits); the foreign keys that
// delete a conversation's turns with it; and BEGIN IMMEDIATE for
// transactions, so that a writer takes the write lock first and two
// processes cannot deadlock upgrading read locks.
func dsn(path string, busy time.Duration) string {
	if strings.HasPrefix(path, "file:") {
		path = "./" + path // a path, not a URI
	}
	return fmt.Sprintf("%s?_txlock=immediate&_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)",
		path, busy.Milliseconds())
}

// Close closes the database. Calls after the first return the first's
// result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		for _, st := range s.prepared {
			st.Close()
		}
		if s.ro != nil {
			s.ro.close()
			return
		}
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("sqlite: close: %w", err)
		}
	})
	return s.closeErr
}

// stmt returns the prepared query for use in tx.
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	return tx.StmtContext(ctx, s.prepared[query])
}

// lockWrite takes the write semaphore, or fails when ctx ends first.
func (s *Store) lockWrite(ctx context.Context) error {
	select {
	case s.write <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) unlockWrite() { <-s.write }
