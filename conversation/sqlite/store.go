package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mombot/mombot/conversation"
)

var _ conversation.Store = (*Store)(nil)

// busyTimeout is how long a statement waits for a lock that another process
// holds before it fails.
const busyTimeout = 5 * time.Second

// maxConns bounds the connections of one Store; reads run in parallel on
// them, as WAL readers block neither each other nor the writer.
const maxConns = 4

// Options configure [Open]. The zero value means the defaults.
type Options struct {
	// Logger receives a line when Open sets up or upgrades the schema;
	// nil means slog.Default().
	Logger *slog.Logger
	// ReadOnly opens an existing database only to read it, for commands
	// that look at the records while a server may be writing (see the
	// package doc): no file is created, no schema set up or changed, and
	// Put and Delete fail with an error wrapping conversation.ErrReadOnly.
	ReadOnly bool
}

// Store is a [conversation.Store] on an SQLite database file. It is safe for
// concurrent use by many goroutines, and by several processes that open the
// same file. Use [Open] to make one.
type Store struct {
	db       *sql.DB
	path     string
	readOnly bool
	empty    bool // read-only, on a database that no writer has set up yet
	// write is held around every write: SQLite lets one connection write
	// at a time anyway, and this process's writers wait here, in turn and
	// for as long as their context allows, instead of polling SQLite's
	// lock; the busy timeout is left to other processes.
	write chan struct{}
}

// Open opens the database at path. A writer (the default) creates the file
// with mode 0600 if it is missing and sets up or upgrades its schema; it
// refuses a file that is not a database, or is one of a schema it does not
// know, without changing it. With [Options].ReadOnly it opens an existing
// database as it is. The caller must [Store.Close] the store.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	s := &Store{path: path, readOnly: o.ReadOnly, write: make(chan struct{}, 1)}
	if err := s.open(o.Logger); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) open(log *slog.Logger) error {
	// Every connection waits for other processes' locks, and commits with
	// synchronous=FULL: in WAL mode that syncs the -wal at every commit,
	// so a write that returned survives a power cut, and a checkpoint
	// (which a reader's connection may run as it closes) syncs the
	// database before the -wal is reset.
	q := url.Values{"_pragma": {fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()), "synchronous(FULL)"}}
	if s.readOnly {
		// Read-write without create, so that SQLite can recover the -wal
		// and -shm of a writer that died, as any connection does; query_only
		// makes SQLite itself refuse a statement that would write.
		if _, err := os.Stat(s.path); err != nil {
			return bare(err)
		}
		q.Add("_pragma", "query_only(1)")
	} else {
		// SQLite creates a database with mode 0644 less the umask, and
		// gives the -wal and -shm the database's mode: creating the file
		// first makes all three private.
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return bare(err)
		}
		if err := f.Close(); err != nil {
			return err
		}
		q.Add("_pragma", "secure_delete(1)") // deleted records are overwritten with zeros
		q.Set("_txlock", "immediate")        // transactions take the write lock first
	}
	q.Set("mode", "rw") // the file is there; never create it
	abs, err := filepath.Abs(s.path)
	if err != nil {
		return err
	}
	// A URI, so that any character of the path is taken literally.
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
	if s.db, err = sql.Open("sqlite", dsn); err != nil {
		return err
	}
	s.db.SetMaxOpenConns(maxConns)
	s.db.SetMaxIdleConns(maxConns)

	ctx, cancel := context.WithTimeout(context.Background(), busyTimeout+10*time.Second)
	defer cancel()
	if s.readOnly {
		err = s.check(ctx)
	} else {
		err = s.migrate(ctx, log)
	}
	if err != nil {
		s.db.Close()
		return s.translate(err)
	}
	return nil
}

// bare returns the error of an os call without the path, which Open's error
// names already: "sqlite: open PATH: no such file or directory".
func bare(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// Close closes the database. Calls after the first return nil.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlite: close %s: %w", s.path, err)
	}
	return nil
}

// Scrub implements [conversation.Store]: deleted and overwritten records are
// already overwritten in the database file (secure_delete), and Scrub
// checkpoints the write-ahead log and truncates it, so that no old page
// remains there either. A read-only store has written nothing to scrub.
func (s *Store) Scrub(ctx context.Context) error {
	if s.readOnly {
		return nil
	}
	var busy, logFrames, done int
	err := s.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done)
	switch {
	case err != nil:
		return fmt.Errorf("sqlite: scrub %s: %w", s.path, s.translate(err))
	case busy != 0:
		return fmt.Errorf("sqlite: scrub %s: a reader holds the log; its old pages stay until the next checkpoint", s.path)
	}
	return nil
}

// Get implements [conversation.Store].
func (s *Store) Get(ctx context.Context, kind conversation.Kind, key string) (conversation.Record, error) {
	r := conversation.Record{Key: key}
	err := conversation.ErrNotFound
	if !s.empty {
		err = s.db.QueryRowContext(ctx, `SELECT data, version FROM records WHERE kind = ? AND key = ?`, string(kind), key).Scan(&r.Data, &r.Version)
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = conversation.ErrNotFound
	}
	if err != nil {
		return conversation.Record{}, fmt.Errorf("sqlite: get %s %q: %w", kind, key, s.translate(err))
	}
	return r, nil
}

// Put implements [conversation.Store]. keep is ignored: [conversation.Memory]
// deletes what has expired itself ([conversation.Memory.Sweep]).
func (s *Store) Put(ctx context.Context, kind conversation.Kind, rec conversation.Record, _ time.Duration) (int64, error) {
	version := newVersion(rec.Version)
	var n int64
	var err error
	if rec.Version == 0 {
		n, err = s.exec(ctx, `INSERT INTO records (kind, key, data, version) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			string(kind), rec.Key, string(rec.Data), version)
	} else {
		n, err = s.exec(ctx, `UPDATE records SET data = ?, version = ? WHERE kind = ? AND key = ? AND version = ?`,
			string(rec.Data), version, string(kind), rec.Key, rec.Version)
	}
	if err == nil && n == 0 {
		err = conversation.ErrConflict
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: put %s %q: %w", kind, rec.Key, err)
	}
	return version, nil
}

// Delete implements [conversation.Store].
func (s *Store) Delete(ctx context.Context, kind conversation.Kind, key string, version int64) error {
	n, err := s.exec(ctx, `DELETE FROM records WHERE kind = ?1 AND key = ?2 AND (?3 = 0 OR version = ?3)`, string(kind), key, version)
	if err == nil && n == 0 {
		// Nothing deleted: either there is no record or it has another
		// version, which a read tells apart.
		err = conversation.ErrNotFound
		if version != 0 {
			if _, gerr := s.Get(ctx, kind, key); gerr == nil {
				err = conversation.ErrConflict
			} else if !errors.Is(gerr, conversation.ErrNotFound) {
				err = gerr
			}
		}
	}
	if err != nil {
		return fmt.Errorf("sqlite: delete %s %q: %w", kind, key, err)
	}
	return nil
}

// List implements [conversation.Store].
func (s *Store) List(ctx context.Context, kind conversation.Kind, prefix string) ([]conversation.Record, error) {
	recs, err := s.list(ctx, kind, prefix)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list %s %q: %w", kind, prefix, s.translate(err))
	}
	return recs, nil
}

func (s *Store) list(ctx context.Context, kind conversation.Kind, prefix string) ([]conversation.Record, error) {
	if s.empty {
		return nil, nil
	}
	// The keys with the prefix are the first ones from the prefix on, in
	// key order (SQLite compares text byte by byte, as Go does).
	rows, err := s.db.QueryContext(ctx, `SELECT key, data, version FROM records WHERE kind = ? AND key >= ? ORDER BY key`, string(kind), prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recs []conversation.Record
	for rows.Next() {
		var r conversation.Record
		if err := rows.Scan(&r.Key, &r.Data, &r.Version); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(r.Key, prefix) {
			break
		}
		recs = append(recs, r)
	}
	return recs, rows.Err()
}

// exec runs a statement that writes, in its own transaction, and returns the
// number of rows it changed.
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	if s.readOnly {
		return 0, conversation.ErrReadOnly
	}
	select {
	case s.write <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-s.write }()
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, s.translate(err)
	}
	return res.RowsAffected()
}

// newVersion returns the version of a value that replaces one of version
// old: 63 random bits, never 0 nor old. Random versions, unlike a counter
// per record, are not given again after a record is deleted and made anew;
// two values of one record share one with a chance of 2^-63.
func newVersion(old int64) int64 {
	for {
		if v := rand.Int64(); v != 0 && v != old {
			return v
		}
	}
}
