package main

import (
	"context"
	"flag"
	"fmt"
	neturl "net/url"
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
	store, err := openStore(ctx, c.store, c.timeout, e)
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

// openStore opens the store a URL names: a plain path or file:PATH for the
// JSON file, sqlite:PATH for SQLite, redis://HOST:PORT/DB[?prefix=P] for
// Redis. An empty URL is the JSON file at its default path.
func openStore(ctx context.Context, url string, timeout time.Duration, e *env) (conversation.Store, error) {
	scheme, rest := splitStoreURL(url)
	switch scheme {
	case "file":
		if rest == "" {
			rest = jsonfile.DefaultPath()
		}
		s, err := jsonfile.Open(rest, &jsonfile.Options{Logger: e.log})
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", url, err)
		}
		return s, nil
	case "sqlite":
		if rest == "" {
			return nil, usagef("store %q: sqlite: needs a path, like sqlite:data/mombot.db", url)
		}
		s, err := sqlite.Open(rest, &sqlite.Options{Logger: e.log, Timeout: timeout})
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", url, err)
		}
		return s, nil
	case "redis", "rediss":
		// ?prefix= chooses the key prefix, so several deployments (or
		// tests) can share one database; go-redis does not know it.
		u, err := neturl.Parse(url)
		if err != nil {
			return nil, usagef("store: %s is not a URL", redactURL(url))
		}
		q := u.Query()
		prefix := q.Get("prefix")
		q.Del("prefix")
		u.RawQuery = q.Encode()
		s, err := redis.Open(ctx, u.String(), &redis.Options{Logger: e.log, Prefix: prefix})
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", redactURL(url), err)
		}
		return s, nil
	default:
		return nil, usagef("store %q: unknown kind %q; use a path, file:PATH, sqlite:PATH or redis://HOST:PORT/DB", url, scheme)
	}
}

// redactURL returns url without the password it may carry, for messages.
func redactURL(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "redis URL (unparsable)"
	}
	return u.Redacted()
}
