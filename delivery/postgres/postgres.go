package postgres

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultSchema is the schema of the tables when an options' Schema is
// empty: the conversation store's default.
const DefaultSchema = "public"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are the tables' steps: migrations[i] brings version i to i+1.
var migrations = func() []string {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil || len(entries) == 0 {
		panic(fmt.Sprintf("delivery/postgres: no migrations: %v", err))
	}
	var out []string
	for _, e := range entries {
		b, err := fs.ReadFile(migrationFiles, path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		out = append(out, string(b))
	}
	return out
}()

// lockKey returns a 64-bit advisory lock key for what in schema: an FNV
// hash, so that two keys that collide only make two callers wait for each
// other.
func lockKey(schema, what string) int64 {
	h := fnv.New64a()
	h.Write([]byte("mombot delivery\x00" + schema + "\x00" + what))
	return int64(h.Sum64())
}

// tables names the tables in a schema, quoted.
type tables struct{ schema string }

func (t tables) name(table string) string { return pgx.Identifier{t.schema, table}.Sanitize() }

// migrate sets up or upgrades the delivery tables of schema in one
// transaction under an advisory lock, creating the schema if it is
// missing.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(schema, "migrate")); err != nil {
			return err
		}
		ident := pgx.Identifier{schema}.Sanitize()
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+ident); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+ident); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS delivery_migrations (
			version    integer     PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM delivery_migrations`).Scan(&v); err != nil {
			return err
		}
		if v > len(migrations) {
			return fmt.Errorf("the delivery tables were set up by a newer mombot (version %d; this one knows up to %d)", v, len(migrations))
		}
		for i, m := range migrations[v:] {
			if _, err := tx.Exec(ctx, m); err != nil {
				return fmt.Errorf("migration %d: %w", v+i+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO delivery_migrations (version) VALUES ($1)`, v+i+1); err != nil {
				return err
			}
		}
		return nil
	})
}
