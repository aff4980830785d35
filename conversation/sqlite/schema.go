package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"path"
	"time"
)

// Errors of [Open] for a database of a schema it cannot use. The file is
// left as it is.
var (
	// ErrSchemaTooNew: a newer mombot wrote the database.
	ErrSchemaTooNew = errors.New("database schema is newer than this program")
	// ErrSchemaUnknown: the database holds tables, but not of any mombot
	// release: another program's, or a development version's from before
	// v0.1.0.
	ErrSchemaUnknown = errors.New("database holds tables of no mombot schema")
)

// appID marks a database as mombot's (PRAGMA application_id): "mmbt".
const appID = 0x6d6d6274

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the schema's steps: migrations[i] brings a database of
// schema version i (PRAGMA user_version) to i+1. A read-only store reads a
// database of any version up to len(migrations) as it is: a step that
// changes what the reads use must make check refuse the versions before it.
var migrations = mustLoad(migrationFiles)

// mustLoad reads migrations/*.sql in name order. The files are part of the
// binary, so a missing one is a programming error that every test shows.
func mustLoad(fsys fs.FS) []string {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil || len(entries) == 0 {
		panic(fmt.Sprintf("sqlite: no migrations: %v", err))
	}
	var out []string
	for _, e := range entries {
		b, err := fs.ReadFile(fsys, path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		out = append(out, string(b))
	}
	return out
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// version returns the schema version of the database q reads: 0 when it holds
// no tables yet, else an error unless it is a version of mombot's that this
// program knows.
func version(ctx context.Context, q querier) (int, error) {
	var v, id, objects, legacy int
	if err := q.QueryRowContext(ctx, `SELECT user_version, application_id FROM pragma_user_version, pragma_application_id`).Scan(&v, &id); err != nil {
		return 0, err
	}
	if err := q.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE name = 'schema_version') FROM sqlite_schema`).Scan(&objects, &legacy); err != nil {
		return 0, err
	}
	switch {
	case objects == 0:
		return 0, nil
	case id != appID || v == 0:
		what := "it is another program's database"
		if legacy > 0 {
			what = "it was written by a development version of mombot from before v0.1.0, which this one does not read"
		}
		return 0, fmt.Errorf("%w: %s", ErrSchemaUnknown, what)
	case v > len(migrations):
		return 0, fmt.Errorf("%w: it was written by a newer mombot (schema version %d; this one knows up to %d)", ErrSchemaTooNew, v, len(migrations))
	}
	return v, nil
}

// migrate sets up or upgrades the schema in one transaction, so that a failed
// step changes nothing and two processes opening a new file apply each step
// once: the second waits for the first's write lock, then finds the schema
// current. Then it turns WAL on, which only a database known to be mombot's
// gets.
func (s *Store) migrate(ctx context.Context, log *slog.Logger) error {
	if err := s.setUp(ctx, log); err != nil {
		return err
	}
	// WAL lets readers and the writer work at once; it is a property of
	// the file, and cannot change inside a transaction. Switching needs
	// the file to itself, and SQLite answers SQLITE_BUSY at once, without
	// its busy handler, while another process holds it (two opening a new
	// file together): try again until the busy timeout.
	var mode string
	deadline := time.Now().Add(busyTimeout)
	for {
		err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
		if err == nil {
			break
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(10+rand.IntN(40)) * time.Millisecond):
		}
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, not wal", mode)
	}
	return nil
}

// setUp applies the migrations the database lacks in one transaction, which
// it ends before returning: an open transaction would hold the lock that
// switching to WAL needs, this process's own switch included.
func (s *Store) setUp(ctx context.Context, log *slog.Logger) error {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE, see open
	if err != nil {
		return err
	}
	defer tx.Rollback()
	v, err := version(ctx, tx)
	if err != nil || v == len(migrations) {
		return err
	}
	for i, m := range migrations[v:] {
		if _, err := tx.ExecContext(ctx, m); err != nil {
			return fmt.Errorf("migration %d: %w", v+i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA application_id = %d; PRAGMA user_version = %d`, appID, len(migrations))); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	log.Info("sqlite: set up the database schema", "path", s.path, "from", v, "to", len(migrations))
	return nil
}

// check is a read-only store's look at the schema, which it never changes.
func (s *Store) check(ctx context.Context) error {
	v, err := version(ctx, s.db)
	s.empty = v == 0 // no writer has set it up yet: nothing is stored
	return err
}
