package storeurl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/postgres"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/sqlite"
)

// Kinds of store a URL names.
const (
	File     = "file"
	SQLite   = "sqlite"
	Redis    = "redis"
	Postgres = "postgres"
)

// ErrBadURL is wrapped by the errors about a store URL itself: an unknown
// kind, a missing path, a malformed Redis or PostgreSQL URL.
var ErrBadURL = errors.New("bad store URL")

// Spec is what a store URL names.
type Spec struct {
	// Kind is File, SQLite, Redis or Postgres.
	Kind string
	// Path is the file of a file or sqlite store.
	Path string
	// RedisURL is a redis store's URL for go-redis: the URL without
	// ?prefix=, which go-redis does not know.
	RedisURL string
	// Prefix is a redis store's key prefix; "" means redis.DefaultPrefix.
	Prefix string
	// PostgresURL is a postgres store's URL for pgx: the URL without
	// ?schema=, which pgx would send to the server as a setting.
	PostgresURL string
	// Schema is a postgres store's schema; "" means
	// postgres.DefaultSchema.
	Schema string
}

// split returns a store URL's scheme and the rest: a plain path is of
// scheme "file".
func split(url string) (scheme, rest string) {
	scheme, rest, hasScheme := strings.Cut(url, ":")
	if !hasScheme || len(scheme) == 1 || strings.ContainsAny(scheme, `/\.`) { // a path, maybe C:\ or ./a:b
		scheme, rest = File, url
	}
	return scheme, strings.TrimPrefix(rest, "//")
}

// Parse reads a store URL: a plain path or file:PATH for the JSON file,
// sqlite:PATH for SQLite, redis://HOST:PORT/DB[?prefix=P] (or rediss://)
// for Redis, postgres://USER:PASSWORD@HOST:PORT/DB[?schema=S] (or
// postgresql://) for PostgreSQL. An empty URL is the JSON file at its default path; file: or
// sqlite: without a path is an error. Errors wrap ErrBadURL and never repeat a password.
func Parse(url string) (Spec, error) {
	scheme, rest := split(url)
	switch scheme {
	case File:
		if rest == "" && url != "" {
			// file: alone is a path left out, as sqlite: alone is; the
			// default is chosen by giving no URL at all.
			return Spec{}, fmt.Errorf("store %q: %w: file: needs a path, like file:data/conversations.json", url, ErrBadURL)
		}
		if rest == "" {
			rest = jsonfile.DefaultPath()
		}
		return Spec{Kind: File, Path: rest}, nil
	case SQLite:
		if rest == "" {
			return Spec{}, fmt.Errorf("store %q: %w: sqlite: needs a path, like sqlite:data/mombot.db", url, ErrBadURL)
		}
		return Spec{Kind: SQLite, Path: rest}, nil
	case "redis", "rediss":
		// ?prefix= chooses the key prefix, so several deployments (or
		// tests) can share one database.
		u, err := neturl.Parse(url)
		if err != nil || u.Opaque != "" { // redis:host:port, without the slashes
			return Spec{}, fmt.Errorf("store: %w: %s is not a redis://HOST:PORT/DB URL", ErrBadURL, Redact(url))
		}
		q := u.Query()
		prefix := q.Get("prefix")
		q.Del("prefix")
		u.RawQuery = q.Encode()
		return Spec{Kind: Redis, RedisURL: u.String(), Prefix: prefix}, nil
	case Postgres, "postgresql":
		// ?schema= chooses the schema of the tables, so several
		// deployments (or tests) can share one database.
		u, err := neturl.Parse(url)
		if err != nil || u.Opaque != "" {
			return Spec{}, fmt.Errorf("store: %w: %s is not a postgres://USER:PASSWORD@HOST:PORT/DB URL", ErrBadURL, Redact(url))
		}
		q := u.Query()
		schema := q.Get("schema")
		q.Del("schema")
		u.RawQuery = q.Encode()
		return Spec{Kind: Postgres, PostgresURL: u.String(), Schema: schema}, nil
	default:
		return Spec{}, fmt.Errorf("store %q: %w: unknown kind %q; use a path, file:PATH, sqlite:PATH, redis://HOST:PORT/DB or postgres://USER@HOST:PORT/DB", Redact(url), ErrBadURL, scheme)
	}
}

// Options configure [Open]. The zero value means the defaults.
type Options struct {
	// Logger receives the store's logs; nil means slog.Default().
	Logger *slog.Logger
	// MustExist makes Open fail with an error wrapping fs.ErrNotExist,
	// creating nothing, when a JSON file or SQLite database is not there:
	// for commands that only look at, remove or copy from conversations,
	// so that a mistyped path is reported instead of an empty store.
	MustExist bool
	// AllowUnreachable lets Open succeed while a Redis store does not
	// answer (see redis.Options.AllowUnreachable), for a server that
	// answers without memory until Redis is back. A PostgreSQL store is
	// opened only when the server answers, since a writer sets up its
	// tables as it opens.
	AllowUnreachable bool
	// ReadOnly opens a JSON file or SQLite database only to read it (see
	// jsonfile.Options.ReadOnly and sqlite.Options.ReadOnly): nothing is
	// created, moved or migrated; a file that does not parse is an error
	// wrapping jsonfile.ErrCorrupt or sqlite.ErrCorrupt, and a database of
	// another schema one wrapping sqlite.ErrSchemaUnknown or
	// sqlite.ErrSchemaTooNew; the methods that write fail. It implies
	// MustExist. A PostgreSQL store opened read-only sets up no tables
	// and writes nothing (see postgres.Options.ReadOnly); one where no
	// writer has run is an error wrapping postgres.ErrNoSchema. A Redis
	// store has no read-only mode; opening one writes nothing.
	ReadOnly bool
}

// Open opens the store url names (see [Parse]). The caller closes it.
func Open(ctx context.Context, url string, opts *Options) (conversation.Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	spec, err := Parse(url)
	if err != nil {
		return nil, err
	}
	var s conversation.Store
	switch spec.Kind {
	case File:
		s, err = jsonfile.Open(spec.Path, &jsonfile.Options{Logger: o.Logger, MustExist: o.MustExist, ReadOnly: o.ReadOnly})
	case SQLite:
		if o.MustExist || o.ReadOnly {
			if _, serr := os.Stat(spec.Path); errors.Is(serr, iofs.ErrNotExist) {
				return nil, fmt.Errorf("store %s: no database at %s: %w", url, spec.Path, iofs.ErrNotExist)
			}
		}
		s, err = sqlite.Open(spec.Path, &sqlite.Options{Logger: o.Logger, ReadOnly: o.ReadOnly})
	case Postgres:
		s, err = postgres.Open(ctx, spec.PostgresURL, &postgres.Options{Logger: o.Logger, ReadOnly: o.ReadOnly, Schema: spec.Schema})
	default:
		s, err = redis.Open(ctx, spec.RedisURL, &redis.Options{Logger: o.Logger, Prefix: spec.Prefix, AllowUnreachable: o.AllowUnreachable})
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", Display(url), err)
	}
	return s, nil
}

// Dir returns the folder where the files that belong with the
// conversations are kept (the shared lists, the WhatsApp inbox): the
// folder of a file or sqlite store, else the default data folder.
func Dir(url string) string {
	scheme, rest := split(url)
	if (scheme == File || scheme == SQLite) && rest != "" {
		return filepath.Dir(rest)
	}
	return filepath.Dir(jsonfile.DefaultPath())
}

// Kind returns the kind of store url names, as Parse would, without
// reading the rest: for logs, which must not show a path or a password.
func Kind(url string) string {
	scheme, _ := split(url)
	if scheme == "postgresql" {
		return Postgres
	}
	return scheme
}

// Same reports whether two store URLs name the same storage, however they
// are spelled: file:x.json, x.json and ./x.json are one file, so are a
// path and a symbolic link to it; redis://localhost/0 and
// redis://127.0.0.1:6379 are one database, and under one prefix one store;
// so are postgres://localhost/mombot and postgresql://127.0.0.1:5432/mombot
// in one schema.
func Same(a, b string) (bool, error) {
	sa, err := Parse(a)
	if err != nil {
		return false, err
	}
	sb, err := Parse(b)
	if err != nil {
		return false, err
	}
	server := func(kind string) bool { return kind == Redis || kind == Postgres }
	switch {
	case (server(sa.Kind) || server(sb.Kind)) && sa.Kind != sb.Kind:
		return false, nil
	case sa.Kind == Redis:
		return redisIdentity(sa) == redisIdentity(sb), nil
	case sa.Kind == Postgres:
		return postgresIdentity(sa) == postgresIdentity(sb), nil
	}
	// A JSON file and an SQLite database on one path are one file too.
	pa, pb := resolvePath(sa.Path), resolvePath(sb.Path)
	if pa == pb {
		return true, nil
	}
	fa, erra := os.Stat(pa)
	fb, errb := os.Stat(pb)
	return erra == nil && errb == nil && os.SameFile(fa, fb), nil
}

// resolvePath returns path absolute, clean and with symbolic links
// resolved, also a link to a file not created yet.
func resolvePath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	for range 40 { // as many links as Linux follows
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return r
		}
		target, err := os.Readlink(abs)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(abs), target)
		}
		abs = target
	}
	// The file does not exist yet; its folder may be a link.
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// redisIdentity names the keys a redis store uses: server, database and
// prefix, with go-redis's defaults filled in (port 6379, database 0,
// prefix "mombot:") and the loopback host's spellings made one.
func redisIdentity(s Spec) string {
	u, _ := neturl.Parse(s.RedisURL) // parsed once already
	host, port := strings.ToLower(u.Hostname()), u.Port()
	switch host {
	case "", "localhost", "::1", "127.0.0.1":
		host = "loopback"
	}
	if port == "" {
		port = "6379"
	}
	db := strings.Trim(u.Path, "/")
	if db == "" {
		db = u.Query().Get("db")
	}
	if n, err := strconv.Atoi(db); err == nil {
		db = strconv.Itoa(n)
	} else if db == "" {
		db = "0"
	}
	prefix := s.Prefix
	if prefix == "" {
		prefix = redis.DefaultPrefix
	}
	return net.JoinHostPort(host, port) + "/" + db + "/" + prefix
}

// postgresIdentity names the tables a postgres store uses: server, database
// and schema, with libpq's defaults filled in (port 5432, the database named
// as the user, schema "public") and the local host's spellings made one.
func postgresIdentity(s Spec) string {
	u, _ := neturl.Parse(s.PostgresURL) // parsed once already
	q := u.Query()
	host, port := strings.ToLower(cmp.Or(u.Hostname(), q.Get("host"))), cmp.Or(u.Port(), q.Get("port"), "5432")
	switch host {
	case "", "localhost", "::1", "127.0.0.1", "/var/run/postgresql", "/run/postgresql", "/tmp":
		host = "local"
	}
	user := cmp.Or(u.User.Username(), q.Get("user"))
	db := cmp.Or(strings.TrimPrefix(u.Path, "/"), q.Get("dbname"), user)
	return net.JoinHostPort(host, port) + "/" + db + "/" + cmp.Or(s.Schema, postgres.DefaultSchema)
}

// Redact returns a URL without the password it may carry, for messages.
func Redact(raw string) string {
	if Kind(raw) == Postgres {
		return postgres.Redact(raw)
	}
	u, err := neturl.Parse(raw)
	if err != nil {
		return "redis URL (unparsable)"
	}
	return u.Redacted()
}

// Display returns a store URL fit for output: a redis or postgres URL
// without its password, anything else as given.
func Display(url string) string {
	if scheme, _ := split(url); scheme == "redis" || scheme == "rediss" || Kind(url) == Postgres {
		return Redact(url)
	}
	return url
}
