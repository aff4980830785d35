// Package redistest gives the tests that need Redis a server and key space
// of their own: the Redis named by MOMBOT_TEST_REDIS_URL (the tests skip,
// saying how to set it, when it is not set), a client on it, and a key
// prefix that no other test uses, whose keys are removed when the test
// ends.
//
// Many test processes, and other people's, share that Redis: nothing here
// ever runs FLUSHDB or FLUSHALL, and cleanup removes only the keys under
// the test's own prefix.
package redistest

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/internal/redisglob"
)

// EnvURL is the environment variable that names the Redis the tests may
// write to, such as redis://127.0.0.1:6379/0.
const EnvURL = "MOMBOT_TEST_REDIS_URL"

// SkipMessage is why a test skips when EnvURL is not set.
const SkipMessage = EnvURL + " is not set: set it to a Redis the tests may write to, such as redis://127.0.0.1:6379/0"

// URL returns the Redis the tests run against, or skips the test with
// SkipMessage.
func URL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		tb.Skip(SkipMessage)
	}
	return url
}

// Client returns a client on the test Redis, closed when the test ends,
// for looking at keys as another program would. It skips as URL does.
func Client(tb testing.TB) *goredis.Client {
	tb.Helper()
	opts, err := goredis.ParseURL(URL(tb))
	if err != nil {
		tb.Fatalf("%s: %v", EnvURL, err)
	}
	rdb := goredis.NewClient(opts)
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// Prefix returns a key prefix of the test's own, "mombot-test:" and 12
// random characters and ":", and removes every key under it when the test
// ends. It skips as URL does.
func Prefix(tb testing.TB) string {
	tb.Helper()
	prefix := "mombot-test:" + rand.Text()[:12] + ":"
	rdb := Client(tb)
	tb.Cleanup(func() { DeleteKeys(tb, rdb, prefix) })
	return prefix
}

// DeleteKeys removes every key under prefix, as Unlink does, and reports
// a failure as a test error.
func DeleteKeys(tb testing.TB, rdb *goredis.Client, prefix string) {
	tb.Helper()
	if err := Unlink(context.Background(), rdb, prefix); err != nil {
		tb.Errorf("cleanup of %s: %v", prefix, err)
	}
}

// Unlink removes every key under prefix, with SCAN and UNLINK, for
// cleanups that run outside a test (a TestMain, a benchmark's end). The
// prefix is taken literally, glob characters included. An empty prefix
// is refused: it would match every key of the database.
func Unlink(ctx context.Context, rdb *goredis.Client, prefix string) error {
	if prefix == "" {
		return errors.New("redistest: an empty prefix would delete every key; nothing deleted")
	}
	iter := rdb.Scan(ctx, 0, redisglob.Prefix(prefix), 1000).Iterator()
	var batch []string
	var errs []error
	flush := func() {
		if len(batch) > 0 {
			if err := rdb.Unlink(ctx, batch...).Err(); err != nil {
				errs = append(errs, err)
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
	return errors.Join(append(errs, iter.Err())...)
}
