package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	iofs "io/fs"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/sqlite"
)

// memoryConfig is the conversation memory's configuration: where it is
// stored and its policy. Flags win over MOMBOT_* variables, which win over
// the defaults.
type memoryConfig struct {
	store    string
	timeout  time.Duration
	maxTurns int

	// startWithoutRedis lets open succeed while a redis:// store does not
	// answer (with a warning), for a server that answers without memory
	// until Redis is back. Commands that only work on the store leave it
	// off and fail at once.
	startWithoutRedis bool
	// mustExist makes open fail with an error wrapping fs.ErrNotExist,
	// creating nothing, when a JSON file store is not there: for commands
	// that only look at or remove conversations, so that a mistyped path
	// is reported instead of showing an empty store.
	mustExist bool
}

// register adds --store, --timeout and --max-turns to fs, with defaults
// from the environment. A malformed variable is a usage error.
func (c *memoryConfig) register(fs *flag.FlagSet, e *env) error {
	c.store = e.getenv("MOMBOT_STORE")
	c.timeout = conversation.DefaultTimeout
	c.maxTurns = conversation.DefaultMaxTurns
	if v := e.getenv("MOMBOT_CONVERSATION_TIMEOUT"); v != "" {
		d, err := parseTimeout(v)
		if err != nil {
			return usagef("MOMBOT_CONVERSATION_TIMEOUT: %v", err)
		}
		c.timeout = d
	}
	if v := e.getenv("MOMBOT_MAX_TURNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return usagef("MOMBOT_MAX_TURNS: want a whole number of turns of at least 1, got %q", v)
		}
		c.maxTurns = n
	}
	fs.StringVar(&c.store, "store", c.store, "where conversations are kept: a file path, file:PATH, sqlite:PATH or redis://HOST:PORT/DB (env MOMBOT_STORE; when empty, "+jsonfile.DefaultPath()+")")
	fs.Func("timeout", "inactivity after which a conversation expires, in seconds or as a duration like 30m (env MOMBOT_CONVERSATION_TIMEOUT; default 1800)", func(v string) error {
		d, err := parseTimeout(v)
		c.timeout = d
		return err
	})
	fs.Func("max-turns", "number of most recent turns kept per person (env MOMBOT_MAX_TURNS; default 10)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("want a whole number of at least 1")
		}
		c.maxTurns = n
		return nil
	})
	return nil
}

// parseTimeout reads a number of seconds, as the original's constant is
// given, or a Go duration.
func parseTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, fmt.Errorf("want seconds (1800) or a duration (30m), got %q", v)
		}
		d = time.Duration(n) * time.Second
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive, got %q", v)
	}
	return d, nil
}

// open opens the configured store and a memory over it. The caller closes
// the store.
func (c *memoryConfig) open(ctx context.Context, e *env) (*conversation.Memory, conversation.Store, error) {
	store, err := openStoreWith(ctx, c.store, storeOptions{startWithoutRedis: c.startWithoutRedis, mustExist: c.mustExist}, e)
	if err != nil {
		return nil, nil, err
	}
	mem, err := conversation.New(store, &conversation.Options{Timeout: c.timeout, MaxTurns: c.maxTurns})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return mem, store, nil
}

// dataDir returns the folder where files that belong with the conversations
// (the shared lists, the ids of handled WhatsApp messages) are kept: the
// folder of a file or sqlite store, else the default data folder.
func dataDir(storeURL string) string {
	scheme, rest := splitStoreURL(storeURL)
	if (scheme == "file" || scheme == "sqlite") && rest != "" {
		return filepath.Dir(rest)
	}
	return filepath.Dir(jsonfile.DefaultPath())
}

// splitStoreURL returns a store URL's kind and the rest: a plain path is
// of kind "file".
func splitStoreURL(url string) (scheme, rest string) {
	scheme, rest, hasScheme := strings.Cut(url, ":")
	if !hasScheme || len(scheme) == 1 || strings.ContainsAny(scheme, `/\.`) { // a path, maybe C:\ or ./a:b
		scheme, rest = "file", url
	}
	return scheme, strings.TrimPrefix(rest, "//")
}

// storeSpec is what a store URL names.
type storeSpec struct {
	kind string // "file", "sqlite" or "redis"
	// path is the file of a file or sqlite store.
	path string
	// redisURL is a redis store's URL for go-redis: the URL without
	// ?prefix=, which go-redis does not know.
	redisURL string
	// prefix is a redis store's key prefix; "" means redis.DefaultPrefix.
	prefix string
}

// parseStoreURL reads a store URL: a plain path or file:PATH for the JSON
// file, sqlite:PATH for SQLite, redis://HOST:PORT/DB[?prefix=P] (or
// rediss://) for Redis. An empty URL, or file: alone, is the JSON file at
// its default path. Errors are usage errors and never repeat a password.
func parseStoreURL(url string) (storeSpec, error) {
	scheme, rest := splitStoreURL(url)
	switch scheme {
	case "file":
		if rest == "" {
			rest = jsonfile.DefaultPath()
		}
		return storeSpec{kind: "file", path: rest}, nil
	case "sqlite":
		if rest == "" {
			return storeSpec{}, usagef("store %q: sqlite: needs a path, like sqlite:data/mombot.db", url)
		}
		return storeSpec{kind: "sqlite", path: rest}, nil
	case "redis", "rediss":
		// ?prefix= chooses the key prefix, so several deployments (or
		// tests) can share one database.
		u, err := neturl.Parse(url)
		if err != nil || u.Opaque != "" { // redis:host:port, without the slashes

			return storeSpec{}, usagef("store: %s is not a redis://HOST:PORT/DB URL", redactURL(url))
		}
		q := u.Query()
		prefix := q.Get("prefix")
		q.Del("prefix")
		u.RawQuery = q.Encode()
		return storeSpec{kind: "redis", redisURL: u.String(), prefix: prefix}, nil
	default:
		return storeSpec{}, usagef("store %q: unknown kind %q; use a path, file:PATH, sqlite:PATH or redis://HOST:PORT/DB", url, scheme)
	}
}

// storeOptions are how a command wants its store opened.
type storeOptions struct {
	startWithoutRedis bool // see memoryConfig
	mustExist         bool // see memoryConfig
}

// openStore opens the store a URL names, see parseStoreURL, with the
// default options.
func openStore(ctx context.Context, url string, e *env) (conversation.Store, error) {
	return openStoreWith(ctx, url, storeOptions{}, e)
}

// openStoreWith opens the store a URL names, see parseStoreURL.
func openStoreWith(ctx context.Context, url string, o storeOptions, e *env) (conversation.Store, error) {
	spec, err := parseStoreURL(url)
	if err != nil {
		return nil, err
	}
	switch spec.kind {
	case "file":
		s, err := jsonfile.Open(spec.path, &jsonfile.Options{Logger: e.log, MustExist: o.mustExist})
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", url, err)
		}
		return s, nil
	case "sqlite":
		if o.mustExist {
			if _, err := os.Stat(spec.path); errors.Is(err, iofs.ErrNotExist) {
				return nil, fmt.Errorf("store %s: no database at %s: %w", url, spec.path, iofs.ErrNotExist)
			}
		}
		s, err := sqlite.Open(spec.path, &sqlite.Options{Logger: e.log})
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", url, err)
		}
		return s, nil
	default:
		s, err := redis.Open(ctx, spec.redisURL, &redis.Options{Logger: e.log, Prefix: spec.prefix, AllowUnreachable: o.startWithoutRedis})
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", redactURL(url), err)
		}
		return s, nil
	}
}

// sameStore reports whether two store URLs name the same storage, however
// they are spelled: file:x.json, x.json and ./x.json are one file, so are
// a path and a symbolic link to it; redis://localhost/0 and
// redis://127.0.0.1:6379 are one database, and under one prefix one store.
func sameStore(a, b string) (bool, error) {
	sa, err := parseStoreURL(a)
	if err != nil {
		return false, err
	}
	sb, err := parseStoreURL(b)
	if err != nil {
		return false, err
	}
	if (sa.kind == "redis") != (sb.kind == "redis") {
		return false, nil
	}
	if sa.kind == "redis" {
		return redisIdentity(sa) == redisIdentity(sb), nil
	}
	// A JSON file and an SQLite database on one path are one file too.
	pa, pb := resolvePath(sa.path), resolvePath(sb.path)
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
func redisIdentity(s storeSpec) string {
	u, _ := neturl.Parse(s.redisURL) // parsed once already
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
	prefix := s.prefix
	if prefix == "" {
		prefix = redis.DefaultPrefix
	}
	return net.JoinHostPort(host, port) + "/" + db + "/" + prefix
}

// redactURL returns url without the password it may carry, for messages.
func redactURL(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "redis URL (unparsable)"
	}
	return u.Redacted()
}

// displayStore returns a store URL fit for output: a redis URL without its
// password, anything else as given.
func displayStore(url string) string {
	if scheme, _ := splitStoreURL(url); scheme == "redis" || scheme == "rediss" {
		return redactURL(url)
	}
	return url
}
