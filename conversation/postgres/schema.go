package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"path"

	"github.com/jackc/pgx/v5"
)

// Errors of [Open] for a schema it cannot use. Nothing is changed.
var (
	// ErrNoSchema: a read-only store found no mombot tables in its
	// schema; a writer sets them up as it opens the database.
	ErrNoSchema = errors.New("no mombot tables in the schema")
	// ErrSchemaTooNew: a newer mombot set up the schema.
	ErrSchemaTooNew = errors.New("database schema is newer than this program")
	// ErrSchemaUnknown: the schema holds a records table that is not
	// mombot's (it has no schema_migrations beside it).
	ErrSchemaUnknown = errors.New("schema holds a records table of another program")
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the schema's steps: migrations[i] brings a schema of
// version i (the highest version in schema_migrations) to i+1. A read-only
// store reads a schema of any version up to len(migrations) as it is: a
// step that changes what the reads use must make check refuse the versions
// before it.
var migrations = mustLoad(migrationFiles)

// mustLoad reads migrations/*.sql in name order. The files are part of the
// binary, so a missing one is a programming error that every test shows.
func mustLoad(fsys fs.FS) []string {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil || len(entries) == 0 {
		panic(fmt.Sprintf("postgres: no migrations: %v", err))
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

// lockKey is the advisory lock that writers opening the same schema take
// around its migration, so that replicas starting at once migrate it once.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("mombot migrate\x00" + schema))
	return int64(h.Sum64())
}

type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// version returns the schema version of the store's schema as q sees it: 0
// when it holds no mombot tables, else an error unless it is a version this
// program knows.
func (s *Store) version(ctx context.Context, q queryer) (int, error) {
	var migrated, records bool
	err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL`,
		s.table("schema_migrations"), s.table("records")).Scan(&migrated, &records)
	switch {
	case err != nil:
		return 0, err
	case !migrated && records:
		return 0, fmt.Errorf("%w: choose another schema with ?schema= (Options.Schema)", ErrSchemaUnknown)
	case !migrated:
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+s.table("schema_migrations")).Scan(&v); err != nil {
		return 0, err
	}
	if v > len(migrations) {
		return 0, fmt.Errorf("%w: it was set up by a newer mombot (schema version %d; this one knows up to %d)", ErrSchemaTooNew, v, len(migrations))
	}
	return v, nil
}

// migrate sets up or upgrades the schema in one transaction, under an
// advisory lock: a failed step changes nothing, and of several writers
// opening a new schema at once the first migrates it while the others wait
// for the lock, then find it current.
func (s *Store) migrate(ctx context.Context, log *slog.Logger) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(s.schema)); err != nil {
		return err
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, s.schema).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		// Checked first, since CREATE SCHEMA IF NOT EXISTS needs the
		// right to create schemas even when there is nothing to create.
		if _, err := tx.Exec(ctx, `CREATE SCHEMA `+s.ident()); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	v, err := s.version(ctx, tx)
	if err != nil || v == len(migrations) {
		return err
	}
	// The migrations name their tables unqualified: they go in the
	// store's schema.
	if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+s.ident()); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return err
	}
	for i, m := range migrations[v:] {
		if _, err := tx.Exec(ctx, m); err != nil {
			return fmt.Errorf("migration %d: %w", v+i+1, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v+i+1); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	log.InfoContext(ctx, "postgres: set up the database schema", "schema", s.schema, "from", v, "to", len(migrations))
	return nil
}

// check is a read-only store's look at the schema, which it never changes.
func (s *Store) check(ctx context.Context) error {
	v, err := s.version(ctx, s.pool)
	if err == nil && v == 0 {
		err = fmt.Errorf("%w %q: a writer (mombot serve, or history migrate --to it) sets them up", ErrNoSchema, s.schema)
	}
	return err
}
