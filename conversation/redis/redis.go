package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.Store = (*Store)(nil)

// DefaultPrefix is the key prefix when [Options].Prefix is empty.
const DefaultPrefix = "mombot:"

// Options configure [Open]. The zero value means the defaults.
type Options struct {
	// Prefix is put in front of every key the store, its [Locker] and its
	// [Dedup] use, so that several deployments or tests can share one
	// database; "" means DefaultPrefix.
	Prefix string
	// Logger receives the turns dropped as invalid on load, lost locks and
	// the persistence warning of Open; nil means slog.Default().
	Logger *slog.Logger
}

// Store is a [conversation.Store] on Redis. It is safe for concurrent use by
// many goroutines, and by many processes that open the same database with
// the same prefix. Use [Open] to make one.
type Store struct {
	rdb    *goredis.Client
	prefix string
	log    *slog.Logger

	closeOnce sync.Once
	closeErr  error
}

// Open connects to the Redis at url, of the form redis://[:PASSWORD@]HOST:PORT/DB
// (rediss:// for TLS), and checks that it answers before ctx is done. The
// caller must [Store.Close] the store.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	ropts, err := goredis.ParseURL(url)
	if err != nil {
		// url.Parse's errors repeat the URL, which may hold a password.
		var uerr *neturl.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("redis: open: %w", err)
	}
	rdb := goredis.NewClient(ropts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis: open %s: %w", ropts.Addr, err)
	}
	s := &Store{rdb: rdb, prefix: o.Prefix, log: o.Logger}
	s.checkPersistence(ctx)
	return s, nil
}

// checkPersistence warns when Redis keeps no append-only file, so that a
// restart of Redis may lose the last minutes of turns. Servers that refuse
// INFO (some managed ones) are left alone.
func (s *Store) checkPersistence(ctx context.Context) {
	info, err := s.rdb.Info(ctx, "persistence").Result()
	if err != nil {
		return
	}
	if strings.Contains(info, "aof_enabled:0") {
		s.log.WarnContext(ctx, "redis: the append-only file is off; turns saved since the last snapshot are lost if Redis stops (set appendonly yes)")
	}
}

// Ping reports whether Redis answers, for a health check.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: ping: %w", err)
	}
	return nil
}

// Close closes the connections to Redis. The store, and the lockers and
// dedups made from it, are unusable after. It is safe to call more than
// once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if err := s.rdb.Close(); err != nil {
			s.closeErr = fmt.Errorf("redis: close: %w", err)
		}
	})
	return s.closeErr
}

func (s *Store) lastKey(phone string) string  { return s.prefix + "last:" + phone }
func (s *Store) turnsKey(phone string) string { return s.prefix + "turns:" + phone }

// globEscape escapes the characters that SCAN's MATCH pattern gives a
// meaning, so that a prefix is matched literally.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
