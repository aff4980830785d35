package redis_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"

	conversationredis "github.com/mombot/mombot/conversation/redis"
	goredis "github.com/redis/go-redis/v9"
)

// testURL returns the Redis the tests run against, or skips the test.
func testURL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv("MOMBOT_TEST_REDIS_URL")
	if url == "" {
		tb.Skip("MOMBOT_TEST_REDIS_URL is not set: set it to a Redis the tests may write to, such as redis://127.0.0.1:6379/0")
	}
	return url
}

// newPrefix returns a key prefix of the test's own and removes every key
// under it when the test ends.
func newPrefix(tb testing.TB) string {
	tb.Helper()
	prefix := fmt.Sprintf("mombot-test:%s:", rand.Text()[:12])
	rdb := rawClient(tb)
	tb.Cleanup(func() { deleteKeys(tb, rdb, prefix) })
	return prefix
}

// rawClient returns a client on the test Redis, for looking at keys as
// another program would.
func rawClient(tb testing.TB) *goredis.Client {
	tb.Helper()
	opts, err := goredis.ParseURL(testURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	rdb := goredis.NewClient(opts)
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// deleteKeys removes every key under prefix.
func deleteKeys(tb testing.TB, rdb *goredis.Client, prefix string) {
	tb.Helper()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	flush := func() {
		if len(batch) > 0 {
			if err := rdb.Unlink(ctx, batch...).Err(); err != nil {
				tb.Errorf("cleanup of %s: %v", prefix, err)
			}
			batch = batch[:0]
		}
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			flush()
		}
	}
	flush()
	if err := iter.Err(); err != nil {
		tb.Errorf("cleanup of %s: %v", prefix, err)
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// loggers remembers the logger each test store was opened with, for the
// lockers on it.
var loggers sync.Map // *conversationredis.Store -> *slog.Logger

func logOf(s *conversationredis.Store) *slog.Logger {
	if l, ok := loggers.Load(s); ok {
		return l.(*slog.Logger)
	}
	return quiet
}

// open opens a conversation store under prefix, whose client the
// delivery backend shares, and closes it when the test ends.
func open(tb testing.TB, prefix string, opts *conversationredis.Options) *conversationredis.Store {
	tb.Helper()
	var o conversationredis.Options
	if opts != nil {
		o = *opts
	}
	o.Prefix = prefix
	if o.Logger == nil {
		o.Logger = quiet
	}
	s, err := conversationredis.Open(context.Background(), testURL(tb), &o)
	if err == nil {
		loggers.Store(s, o.Logger)
	}
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}
