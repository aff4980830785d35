package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
)

var _ conversation.Store = (*Store)(nil)

// Defaults of [Options].
const (
	// DefaultSchema is the schema of the tables when Options.Schema is
	// empty.
	DefaultSchema = "public"
	// DefaultMaxConns bounds one Store's connections unless the URL's
	// pool_max_conns or Options.MaxConns set it. Each call holds one for
	// one statement; replicas of a service each have their own.
	DefaultMaxConns = 10
	// DefaultConnectTimeout bounds one attempt to connect unless the URL's
	// connect_timeout or Options.ConnectTimeout set it, so that a server
	// that drops packets fails a call in seconds instead of minutes.
	DefaultConnectTimeout = 5 * time.Second
)

// Options configure [Open]. The zero value means the defaults.
type Options struct {
	// Logger receives a line when Open sets up or upgrades the schema;
	// nil means slog.Default().
	Logger *slog.Logger
	// ReadOnly opens the store only to read it, for commands that look at
	// the records while a server may be writing: Open sets up no schema
	// and writes nothing (its sessions are read-only, so the server
	// itself refuses a write), a schema without mombot's tables is an
	// error wrapping ErrNoSchema, and Put and Delete fail with an error
	// wrapping conversation.ErrReadOnly.
	ReadOnly bool
	// Schema is the PostgreSQL schema that holds the tables; "" means
	// DefaultSchema. A writer creates it if it is missing. Several
	// deployments, or tests, can share one database in schemas of their
	// own.
	Schema string
	// MaxConns bounds the store's connections; 0 means the URL's
	// pool_max_conns or else DefaultMaxConns.
	MaxConns int32
	// ConnectTimeout bounds one attempt to connect; 0 means the URL's
	// connect_timeout or else DefaultConnectTimeout.
	ConnectTimeout time.Duration
}

// Store is a [conversation.Store] on PostgreSQL. It is safe for concurrent
// use by many goroutines, and by many processes that open the same
// database and schema. Use [Open] to make one.
type Store struct {
	pool     *pgxpool.Pool
	schema   string
	server   string // host:port, for errors
	readOnly bool

	// The statements, with the table's name in the store's schema.
	get, insert, update, del, list, listFrom string

	closeOnce sync.Once
}

// Open connects to the PostgreSQL database that url names, a URL such as
// postgres://USER:PASSWORD@HOST:5432/DB?sslmode=require (or any connection
// string pgx reads, with its pool_* settings), and, unless
// [Options].ReadOnly, sets up or upgrades the store's tables in
// [Options].Schema. It fails when the server cannot be reached before ctx
// is done. Errors never repeat the password. The caller must [Store.Close]
// the store.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", parseError(url, err))
	}
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	switch {
	case o.ConnectTimeout > 0:
		cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	case !strings.Contains(url, "connect_timeout"):
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	if o.ReadOnly {
		// The server refuses any write of these sessions.
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	s := &Store{schema: o.Schema, server: server(cfg), readOnly: o.ReadOnly}
	records := s.table("records")
	s.get = `SELECT data, version FROM ` + records + ` WHERE kind = $1 AND key = $2`
	s.insert = `INSERT INTO ` + records + ` (kind, key, data) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING version`
	s.update = `UPDATE ` + records + ` SET data = $3, version = DEFAULT WHERE kind = $1 AND key = $2 AND version = $4 RETURNING version`
	// One statement deletes and tells a record of another version from
	// none: the outer SELECT sees the table as the statement began.
	s.del = `WITH d AS (DELETE FROM ` + records + ` WHERE kind = $1 AND key = $2 AND ($3::bigint = 0 OR version = $3) RETURNING 1)
		SELECT EXISTS (SELECT FROM d), EXISTS (SELECT FROM ` + records + ` WHERE kind = $1 AND key = $2)`
	// The keys with a prefix are those from the prefix up to the least
	// string after them all (see after): a range of the index, in key
	// order, whatever the plan, and literal, unlike LIKE's % and _.
	s.list = `SELECT key, data, version FROM ` + records + ` WHERE kind = $1 AND key >= $2 AND key < $3 ORDER BY key`
	s.listFrom = `SELECT key, data, version FROM ` + records + ` WHERE kind = $1 AND key >= $2 ORDER BY key`

	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", s.server, err)
	}
	if o.ReadOnly {
		err = s.check(ctx)
	} else {
		err = s.migrate(ctx, o.Logger)
	}
	if err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("postgres: open %s schema %s: %w", s.server, s.schema, s.translate(err))
	}
	return s, nil
}

// table returns the name of a table in the store's schema, quoted.
func (s *Store) table(name string) string { return pgx.Identifier{s.schema, name}.Sanitize() }

// ident returns the store's schema's name, quoted.
func (s *Store) ident() string { return pgx.Identifier{s.schema}.Sanitize() }

// Close closes the store's connections, waiting for the calls that hold one
// to end. Calls after the first do nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// Ping reports whether the database answers, for a health check.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w", s.translate(err))
	}
	return nil
}

// Pool returns the store's connection pool, so that what shares the
// database with the records uses the same connections. Closing the store
// closes it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the schema that holds the store's tables.
func (s *Store) Schema() string { return s.schema }

// Scrub implements [conversation.Store]. It does nothing: PostgreSQL keeps
// a deleted or overwritten row's old version in the table's files until
// VACUUM (autovacuum) makes its space reusable and a later write covers it,
// and in its write-ahead log and base backups for as long as they are
// kept. Those are the operator's (see the package doc).
func (s *Store) Scrub(context.Context) error { return nil }

// Get implements [conversation.Store].
func (s *Store) Get(ctx context.Context, kind conversation.Kind, key string) (conversation.Record, error) {
	r := conversation.Record{Key: key}
	err := s.pool.QueryRow(ctx, s.get, string(kind), key).Scan(&r.Data, &r.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		err = conversation.ErrNotFound
	}
	if err != nil {
		return conversation.Record{}, fmt.Errorf("postgres: get %s %s: %w", kind, phone.Mask(key), s.translate(err))
	}
	return r, nil
}

// Put implements [conversation.Store] with one statement: an INSERT that
// does nothing over an existing record, or an UPDATE of the record with
// the expected version. keep is ignored: [conversation.Memory] deletes what
// has expired itself ([conversation.Memory.Sweep]).
func (s *Store) Put(ctx context.Context, kind conversation.Kind, rec conversation.Record, _ time.Duration) (int64, error) {
	var v int64
	var err error
	switch {
	case s.readOnly:
		err = conversation.ErrReadOnly
	case rec.Version == 0:
		err = s.pool.QueryRow(ctx, s.insert, string(kind), rec.Key, rec.Data).Scan(&v)
	default:
		err = s.pool.QueryRow(ctx, s.update, string(kind), rec.Key, rec.Data, rec.Version).Scan(&v)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		err = conversation.ErrConflict
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: put %s %s: %w", kind, phone.Mask(rec.Key), s.translate(err))
	}
	return v, nil
}

// Delete implements [conversation.Store] with one statement.
func (s *Store) Delete(ctx context.Context, kind conversation.Kind, key string, version int64) error {
	var deleted, exists bool
	err := conversation.ErrReadOnly
	if !s.readOnly {
		err = s.pool.QueryRow(ctx, s.del, string(kind), key, version).Scan(&deleted, &exists)
	}
	switch {
	case err != nil:
	case deleted:
		return nil
	case exists && version != 0:
		err = conversation.ErrConflict
	default:
		err = conversation.ErrNotFound
	}
	return fmt.Errorf("postgres: delete %s %s: %w", kind, phone.Mask(key), s.translate(err))
}

// List implements [conversation.Store].
func (s *Store) List(ctx context.Context, kind conversation.Kind, prefix string) ([]conversation.Record, error) {
	var rows pgx.Rows
	if end, ok := after(prefix); ok {
		rows, _ = s.pool.Query(ctx, s.list, string(kind), prefix, end)
	} else {
		rows, _ = s.pool.Query(ctx, s.listFrom, string(kind), prefix)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (conversation.Record, error) {
		var r conversation.Record
		err := row.Scan(&r.Key, &r.Data, &r.Version)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list %s: %w", kind, s.translate(err))
	}
	return recs, nil
}

// after returns the least string that sorts, byte by byte, after every
// string that starts with prefix: the prefix with its last character made
// the next one, after dropping those that have no next one. ok is false when
// no string is after them all (prefix is "" or of U+10FFFF alone).
func after(prefix string) (end string, ok bool) {
	r := []rune(prefix)
	for i := len(r) - 1; i >= 0; i-- {
		next := r[i] + 1
		if next > unicode.MaxRune {
			continue
		}
		if next == 0xD800 { // surrogates are no characters of UTF-8
			next = 0xE000
		}
		return string(append(r[:i], next)), true
	}
	return "", false
}
