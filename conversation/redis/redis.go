package redis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.Store = (*Store)(nil)

// DefaultPrefix is the key prefix when [Options].Prefix is empty.
const DefaultPrefix = "mombot:"

// Timeouts of every call to Redis, unless the URL given to [Open] sets
// them (dial_timeout, read_timeout, write_timeout). go-redis's
// own defaults (5 s to dial, tried 5 times, 3 s to read, 3 retries) let one
// call to a Redis that drops packets take over a minute; with these it fails
// within about 2 s (two dials of 1 s), and a Redis that accepts but does not
// answer within 1 s.
const (
	// DefaultDialTimeout bounds one attempt to connect; a connection is
	// attempted twice.
	DefaultDialTimeout = time.Second
	// DefaultReadTimeout bounds the wait for a reply. Every command the
	// store and its helpers send is short: a script over one record, or a
	// SCAN step of 1,000 keys, or a pipeline of 100 records.
	DefaultReadTimeout = time.Second
	// DefaultWriteTimeout bounds sending a command.
	DefaultWriteTimeout = time.Second
)

// dialAttempts is how many times a new connection is attempted before a
// call fails.
const dialAttempts = 2

// Options configure [Open]. The zero value means the defaults.
type Options struct {
	// Prefix is put in front of every key the store uses (and what
	// delivery/redis keeps beside it), so that several deployments or
	// tests can share one database; "" means DefaultPrefix.
	Prefix string
	// Logger receives the warnings of Open; nil means slog.Default().
	Logger *slog.Logger
	// AllowUnreachable makes Open succeed when Redis cannot be reached
	// (the connection is refused, reset or times out, or the name does not
	// resolve) or answers that it is not ready yet (LOADING, MASTERDOWN,
	// TRYAGAIN, BUSY, max clients): it logs a warning and returns the
	// store, whose calls fail until Redis answers and work from then on. A
	// server that can answer without memory sets it, so that it can start
	// while Redis is down. Open fails either way on a URL that does not
	// parse and on a reply that says the URL is wrong (a wrong password,
	// NOAUTH, a database index out of range) or a TLS failure, which
	// waiting would not mend.
	AllowUnreachable bool
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
// (rediss:// for TLS), and checks that it answers before ctx is done (see
// [Options].AllowUnreachable). The URL may carry go-redis's options as
// query parameters (read_timeout=2s, ...). The caller must [Store.Close]
// the store.
//
// Calls fail rather than wait when Redis is unreachable: see
// DefaultDialTimeout. A failed call is not retried, because a command whose
// reply was lost may have run: a conditional Put sent again would find its
// own write and report a conflict, and what delivery/redis sends on the
// same client (a dedup's SET NX, a queue's LPOP) may not run twice. So the
// URL's max_retries may only be 0 or -1, both meaning none (to go-redis
// itself, 0 means its default of 3); Open refuses other values.
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
	if err := setTimeouts(ropts, url); err != nil {
		return nil, fmt.Errorf("redis: open: %w", err)
	}
	rdb := goredis.NewClient(ropts)
	s := &Store{rdb: rdb, prefix: o.Prefix, log: o.Logger}
	if err := rdb.Ping(ctx).Err(); err != nil {
		if !o.AllowUnreachable || !unreachable(err) {
			rdb.Close()
			return nil, fmt.Errorf("redis: open %s: %w", ropts.Addr, err)
		}
		o.Logger.WarnContext(ctx, "redis: not answering; going on without it until it does",
			"addr", ropts.Addr, "err", err)
		return s, nil
	}
	s.checkPersistence(ctx)
	return s, nil
}

// unreachable reports whether err, from the first call to Redis, means that
// Redis cannot be reached or is not ready yet, as opposed to an answer that
// the URL is wrong.
func unreachable(err error) bool {
	var reply goredis.Error
	if errors.As(err, &reply) {
		return goredis.IsLoadingError(err) || goredis.IsMasterDownError(err) ||
			goredis.IsTryAgainError(err) || goredis.IsMaxClientsError(err) ||
			goredis.HasErrorPrefix(err, "BUSY ")
	}
	// TLS failures are a configuration to mend. A TLS alert from the
	// server comes wrapped in a *net.OpError, so these are checked first.
	var (
		alert   tls.AlertError
		record  tls.RecordHeaderError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	if errors.As(err, &alert) || errors.As(err, &record) || errors.As(err, &verify) ||
		errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) ||
		strings.Contains(err.Error(), "tls: ") {
		return false
	}
	var nerr net.Error
	return errors.As(err, &nerr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, goredis.ErrPoolTimeout)
}

// setTimeouts applies the package's timeouts to what the URL leaves unset,
// and turns off go-redis's retries, refusing a URL that asks for some.
func setTimeouts(o *goredis.Options, url string) error {
	var q neturl.Values
	if u, err := neturl.Parse(url); err == nil { // ParseURL accepted it
		q = u.Query()
	}
	if !q.Has("dial_timeout") {
		o.DialTimeout = DefaultDialTimeout
	}
	if !q.Has("read_timeout") {
		o.ReadTimeout = DefaultReadTimeout
	}
	if !q.Has("write_timeout") {
		o.WriteTimeout = DefaultWriteTimeout
	}
	switch o.MaxRetries {
	case 0, -1:
		o.MaxRetries = -1 // none; go-redis reads 0 as its default, 3
	default:
		return fmt.Errorf("max_retries=%d: the store never retries a call, since a write whose reply was lost may have run; use 0 or leave it out", o.MaxRetries)
	}
	o.DialerRetries = dialAttempts
	return nil
}

// checkPersistence warns when Redis keeps no append-only file, so that a
// restart of Redis may lose the last minutes of writes. Servers that refuse
// INFO (some managed ones) are left alone.
func (s *Store) checkPersistence(ctx context.Context) {
	info, err := s.rdb.Info(ctx, "persistence").Result()
	if err != nil {
		return
	}
	if strings.Contains(info, "aof_enabled:0") {
		s.log.WarnContext(ctx, "redis: the append-only file is off; records written since the last snapshot are lost if Redis stops (set appendonly yes)")
	}
}

// Ping reports whether Redis answers, for a health check.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: ping: %w", err)
	}
	return nil
}

// Scrub implements [conversation.Store]. Redis keeps no copy of a deleted or
// overwritten key in memory; what its append-only file and snapshots hold
// is the operator's (BGREWRITEAOF rewrites the file from what is live).
func (s *Store) Scrub(context.Context) error { return nil }

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

// Client returns the store's Redis client, so that what shares the Redis
// with the conversations (the WhatsApp inbox and the sender lock of
// delivery/redis) uses the same connections, timeouts and reconnection.
// Closing the store closes it.
func (s *Store) Client() *goredis.Client { return s.rdb }

// Prefix returns the store's key prefix; what shares the Redis puts its
// keys under it too.
func (s *Store) Prefix() string { return s.prefix }
