package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation/postgres"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/delivery"
	deliverypostgres "github.com/mombot/mombot/delivery/postgres"
	deliveryredis "github.com/mombot/mombot/delivery/redis"
)

// senders is how serve serialises each sender's messages, whichever way
// they come (WhatsApp, the family's page), and where it keeps WhatsApp's
// messages from their acknowledgement to their reply. Both follow the
// conversations' store URL, so that one setting (--store) places them:
//
//   - redis://: on the store's Redis, under its key prefix. Every replica
//     on that Redis shares the sender locks and the inbox (with the record
//     of handled ids), so that a sender's messages are answered once and
//     in order whichever replica Meta posts them to.
//   - postgres://: in the store's database and schema (delivery/postgres),
//     shared by every replica on it as on Redis.
//   - a file or sqlite: store: the locks of this process, and
//     whatsapp-inbox.json next to the store.
//
// While a shared store cannot take a message, the webhook is refused
// (503) and Meta delivers it again later, to whichever replica: nothing is
// answered from one process's memory that another replica cannot see, so
// an outage never has a message answered twice or out of order; /healthz
// says "degraded" meanwhile.
type senders struct {
	storeURL string
	locker   delivery.Locker
	rdb      *goredis.Client // nil unless on Redis
	prefix   string          // the keys' on Redis
	pool     *pgxpool.Pool   // nil unless on PostgreSQL
	schema   string          // the tables' on PostgreSQL
}

// openSenders opens the sender locks that go with the store URL; on
// PostgreSQL it sets up their tables.
func openSenders(ctx context.Context, storeURL string, log *slog.Logger) (*senders, error) {
	spec, err := storeurl.Parse(storeURL)
	if err != nil {
		return nil, err
	}
	s := &senders{storeURL: storeURL, locker: &delivery.Local{}}
	if spec.Kind == storeurl.Postgres {
		if s.pool, err = postgresPool(ctx, spec.PostgresURL); err != nil {
			return nil, err
		}
		s.schema = spec.Schema
		if s.locker, err = deliverypostgres.NewLocker(ctx, s.pool, &deliverypostgres.LockerOptions{Schema: s.schema, Logger: log}); err != nil {
			s.pool.Close()
			return nil, fmt.Errorf("serve: sender locks on postgres: %w", err)
		}
		return s, nil
	}
	if spec.Kind != storeurl.Redis {
		return s, nil
	}
	if s.rdb, err = redisClient(spec.RedisURL); err != nil {
		return nil, err
	}
	s.prefix = spec.Prefix
	if s.locker, err = deliveryredis.NewLocker(s.rdb, &deliveryredis.LockerOptions{Prefix: s.prefix, Logger: log}); err != nil {
		s.rdb.Close()
		return nil, err
	}
	return s, nil
}

// inbox opens WhatsApp's inbox. maxAge is how old a message may be and
// still be answered (whatsapp.Config.MaxAge), which bounds how long Redis
// keeps a queue.
func (s *senders) inbox(ctx context.Context, maxAge time.Duration, log *slog.Logger) (delivery.Inbox, error) {
	if s.pool != nil {
		in, err := deliverypostgres.NewInbox(ctx, s.pool, &deliverypostgres.InboxOptions{Schema: s.schema})
		if err != nil {
			return nil, fmt.Errorf("serve: inbox on postgres: %w", err)
		}
		return in, nil
	}
	if s.rdb != nil {
		return deliveryredis.NewInbox(s.rdb, &deliveryredis.InboxOptions{Prefix: s.prefix, MaxAge: maxAge})
	}
	return delivery.OpenFile(inboxFile(s.storeURL), &delivery.FileOptions{Logger: log})
}

// inboxFile is the inbox file serve keeps beside a file: or sqlite: store.
func inboxFile(storeURL string) string {
	return filepath.Join(storeurl.Dir(storeURL), "whatsapp-inbox.json")
}

// existingInbox opens WhatsApp's inbox for erase and history migrate: nil, and no file
// created, when serve has never kept one beside a file or sqlite: store.
func (s *senders) existingInbox(ctx context.Context, log *slog.Logger) (delivery.Inbox, error) {
	if s.rdb == nil && s.pool == nil {
		if _, err := os.Stat(inboxFile(s.storeURL)); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	return s.inbox(ctx, 0, log)
}

// health is the check of what the messages' path depends on for
// /healthz: Redis or PostgreSQL, when on one; nil otherwise.
func (s *senders) health() func(ctx context.Context) error {
	if s.pool != nil {
		return func(ctx context.Context) error {
			if err := s.pool.Ping(ctx); err != nil {
				return fmt.Errorf("postgres unreachable, refusing WhatsApp's messages for Meta to deliver them again: %w", err)
			}
			return nil
		}
	}
	if s.rdb == nil {
		return nil
	}
	return func(ctx context.Context) error {
		if err := s.rdb.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis unreachable, refusing WhatsApp's messages for Meta to deliver them again: %w", err)
		}
		return nil
	}
}

// close closes the connections to Redis or PostgreSQL, if any.
func (s *senders) close() error {
	if s.pool != nil {
		s.pool.Close()
	}
	if s.rdb == nil {
		return nil
	}
	return s.rdb.Close()
}

// redisClient returns a client of the Redis at url, with the conversation
// store's timeouts where url sets none, and no retries of a command: the
// inbox's scripts and the locks decide themselves what to try again.
func redisClient(url string) (*goredis.Client, error) {
	o, err := goredis.ParseURL(url)
	if err != nil {
		// url.Parse's errors repeat the URL, which may hold a password.
		var uerr *neturl.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("serve: sender locks on redis: %w", err)
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = redis.DefaultDialTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = redis.DefaultReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = redis.DefaultWriteTimeout
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = -1 // go-redis reads 0 as its default, 3
	}
	return goredis.NewClient(o), nil
}

// postgresPool returns a pool on the PostgreSQL database at url, with the
// conversation store's bounds where url sets none: connections, and the
// time one attempt to connect may take.
func postgresPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The store parsed this URL first; its error says what is wrong
		// without repeating a password.
		return nil, errors.New("serve: sender locks on postgres: the store URL does not parse")
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = postgres.DefaultMaxConns
	}
	if !strings.Contains(url, "connect_timeout") {
		cfg.ConnConfig.ConnectTimeout = postgres.DefaultConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("serve: sender locks on postgres: %w", err)
	}
	return pool, nil
}
