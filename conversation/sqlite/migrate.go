package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// ErrSchemaTooNew is returned by [Open] when the database was migrated by a
// newer version of this program, whose schema this one does not know.
var ErrSchemaTooNew = errors.New("database schema is newer than this program")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one schema change; version n is applied on top of n-1.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded schema changes, in order.
var migrations = mustLoadMigrations(migrationFiles)

// mustLoadMigrations reads migrations/NNNN_name.sql. The files are part of
// the binary, so a bad one is a programming error that every test shows.
func mustLoadMigrations(fsys fs.FS) []migration {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		panic(err)
	}
	var out []migration
	for _, e := range entries { // ReadDir sorts by name
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != len(out)+1 {
			panic(fmt.Sprintf("sqlite: migration %s: want a name starting %04d_", e.Name(), len(out)+1))
		}
		b, err := fs.ReadFile(fsys, path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	return out
}

// migrate brings db's schema to the last of ms in one transaction, so a
// failed migration changes nothing and two processes opening the same new
// file apply each migration once: the second waits for the first's write
// lock and then finds the schema current.
func migrate(ctx context.Context, db *sql.DB, ms []migration) error {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE, see dsn
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var current int
	err = tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&current)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("migrate: %w: version %d, this program knows %d", ErrSchemaTooNew, current, len(ms))
	}
	if current == len(ms) {
		return nil
	}
	for _, m := range ms[current:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, len(ms)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
