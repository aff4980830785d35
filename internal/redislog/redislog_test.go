package redislog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/internal/redislog"
)

// syncBuffer is a buffer that go-redis's goroutines and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// records parses every line of logs as a JSON record.
func records(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line that is not a JSON record: %v: %q", err, line)
		}
		out = append(out, m)
	}
	return out
}

// A real go-redis client whose pool cannot dial logs it (go-redis's
// internal logger, not the command's error) through the routed slog
// logger: one JSON record at WARN with go-redis's own words.
func TestRouteCarriesARealPoolFailure(t *testing.T) {
	var logs syncBuffer
	redislog.Route(slog.New(slog.NewJSONHandler(&logs, nil)), slog.LevelWarn)

	addr := closedAddr(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, DialerRetries: 1, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING to %s, where nothing listens, succeeded", addr)
	}

	var found map[string]any
	for _, m := range records(t, logs.String()) {
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, "go-redis: connection pool: failed to dial") {
			found = m
		}
	}
	if found == nil {
		t.Fatalf("no go-redis pool record among:\n%s", logs.String())
	}
	msg := found["msg"].(string)
	if found["level"] != "WARN" || !strings.Contains(msg, addr) || !strings.Contains(msg, "connection refused") {
		t.Errorf("the pool record: %v; want WARN naming %s and the refusal", found, addr)
	}
}

// A line go-redis writes without a network: a TTL below its precision is
// truncated, and it says so, through the routed logger.
func TestRouteCarriesATruncationNotice(t *testing.T) {
	var logs syncBuffer
	redislog.Route(slog.New(slog.NewJSONHandler(&logs, nil)), slog.LevelWarn)
	rdb := goredis.NewClient(&goredis.Options{Addr: closedAddr(t), DialerRetries: 1, MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb.Set(ctx, "redislog-test", "v", 500*time.Microsecond) // fails to dial; the notice comes first

	for _, m := range records(t, logs.String()) {
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, "go-redis: specified duration is 500µs") {
			if m["level"] != "WARN" {
				t.Errorf("the truncation record: %v, want WARN", m)
			}
			return
		}
	}
	t.Errorf("no truncation record among:\n%s", logs.String())
}

// The adapter drops go-redis's "redis: " prefix, which "go-redis: "
// replaces, and the trailing newline some of its formats end with.
func TestLoggerPrintf(t *testing.T) {
	var buf bytes.Buffer
	l := redislog.Logger{Log: slog.New(slog.NewTextHandler(&buf, nil))}
	l.Printf(context.Background(), "redis: connection pool: %s\n", "x")
	if got := buf.String(); !strings.Contains(got, `level=WARN msg="go-redis: connection pool: x"`) {
		t.Errorf("Printf wrote %q", got)
	}
	buf.Reset()
	l.Level = slog.LevelDebug
	l.Printf(context.Background(), "redis: connection pool: %s\n", "x")
	if got := buf.String(); got != "" {
		t.Errorf("Printf at debug, on a logger at info, wrote %q", got)
	}
}

// Route(nil) leaves the logger as it was.
func TestRouteNil(t *testing.T) {
	var logs syncBuffer
	redislog.Route(slog.New(slog.NewJSONHandler(&logs, nil)), slog.LevelWarn)
	redislog.Route(nil, slog.LevelWarn)
	rdb := goredis.NewClient(&goredis.Options{Addr: closedAddr(t), DialerRetries: 1, MaxRetries: -1})
	defer rdb.Close()
	rdb.Set(context.Background(), "redislog-test", "v", 500*time.Microsecond)
	if !strings.Contains(logs.String(), "specified duration") {
		t.Errorf("after Route(nil) the earlier logger got nothing:\n%s", logs.String())
	}
}
