package redis_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/internal/redistest"
)

// The test Redis, a key prefix of the test's own and a client to look at
// keys with come from redistest, shared with the other packages' tests.
var (
	testURL   = redistest.URL
	newPrefix = redistest.Prefix
	rawClient = redistest.Client
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

// newStorage returns, for storetest's suites, a storage of each case's
// own: stores that share a prefix of the case's.
func newStorage(tb testing.TB) storetest.NewStorage {
	url := testURL(tb)
	return func(t *testing.T) storetest.Opener {
		prefix := newPrefix(t)
		return func() (conversation.Store, error) {
			return redis.Open(context.Background(), url, &redis.Options{Prefix: prefix, Logger: quiet})
		}
	}
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
