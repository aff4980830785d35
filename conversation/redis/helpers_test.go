package redis_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/internal/redistest"
)

// The test Redis, a key prefix of the test's own and a client to look at
// keys with come from redistest, shared with the other packages' tests;
// they keep their names here so that the tests read as before.
var (
	testURL    = redistest.URL
	newPrefix  = redistest.Prefix
	rawClient  = redistest.Client
	deleteKeys = redistest.DeleteKeys
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// open opens a store under prefix and closes it when the test ends.
func open(tb testing.TB, prefix string, opts *redis.Options) *redis.Store {
	tb.Helper()
	var o redis.Options
	if opts != nil {
		o = *opts
	}
	o.Prefix = prefix
	if o.Logger == nil {
		o.Logger = quiet
	}
	s, err := redis.Open(context.Background(), testURL(tb), &o)
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

// freePort returns a TCP port on 127.0.0.1 that nothing listens on.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServer starts a redis-server of the test's own, without persistence,
// on port, and stops it when the test ends. It skips the test when there is
// no redis-server on PATH.
func startServer(tb testing.TB, port int) {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		tb.Skip("redis-server is not on PATH: the test needs a Redis of its own to start")
	}
	cmd := exec.Command("redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", tb.TempDir())
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}

// stored returns what the conversation's hash at key holds: its head, the
// field name and value of each turn in the head's order, and the number of
// fields in the hash (the head, the turns, and any field of no line).
func stored(tb testing.TB, rdb *goredis.Client, key string) (head string, fields, values []string, n int) {
	tb.Helper()
	m, err := rdb.HGetAll(context.Background(), key).Result()
	if err != nil {
		tb.Fatalf("HGETALL %s: %v", key, err)
	}
	head = m["h"]
	lines := strings.Split(head, "\n")
	for _, l := range lines[1:max(len(lines)-1, 1)] {
		field, _, _ := strings.Cut(l, ":")
		fields = append(fields, field)
		values = append(values, m[field])
	}
	return head, fields, values, len(m)
}
