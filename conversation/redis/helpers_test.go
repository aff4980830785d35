package redis_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/storetest"
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

// testPhone is the phone of the conversation most tests are about.
const testPhone = "+14155551234"

// fixture is what most tests start from: a store under a prefix of the
// test's own, a client to write and look at its keys by hand, and the
// phone whose conversation the test is about. Its methods fail the test on
// an error the test does not expect, so that a test shows only its checks.
type fixture struct {
	tb     testing.TB
	s      *redis.Store
	rdb    *goredis.Client
	ctx    context.Context
	prefix string
	phone  string
}

// newFixture opens a store with opts (nil for the defaults) under a new
// prefix, for testPhone.
func newFixture(tb testing.TB, opts *redis.Options) *fixture {
	tb.Helper()
	prefix := newPrefix(tb)
	return &fixture{tb: tb, s: open(tb, prefix, opts), rdb: rawClient(tb),
		ctx: context.Background(), prefix: prefix, phone: testPhone}
}

// key returns the phone's key of a kind: "chat:" for the hash, "conv:"
// for the previous version's list, "last:", "turns:" or "ids:" for the
// oldest layout.
func (f *fixture) key(kind string) string { return f.prefix + kind + f.phone }

// save appends turns to the phone's conversation one by one, at now.
func (f *fixture) save(now time.Time, lim conversation.Limits, turns ...conversation.Turn) {
	f.tb.Helper()
	for i, tr := range turns {
		if err := f.s.Append(f.ctx, f.phone, tr, now, lim); err != nil {
			f.tb.Fatalf("Append of turn %d: %v", i, err)
		}
	}
}

// refuse fails unless appending tr at now is refused as an invalid turn
// (in these tests: for a tool id in use).
func (f *fixture) refuse(now time.Time, lim conversation.Limits, tr conversation.Turn) {
	f.tb.Helper()
	if err := f.s.Append(f.ctx, f.phone, tr, now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		f.tb.Fatalf("Append of a turn with tool ids %q: err = %v, want ErrInvalidTurn", tr.ToolUseIDs(), err)
	}
}

// load returns the phone's conversation.
func (f *fixture) load() conversation.Conversation {
	f.tb.Helper()
	c, err := f.s.Load(f.ctx, f.phone)
	if err != nil {
		f.tb.Fatalf("Load: %v", err)
	}
	return c
}

// check fails unless the phone's conversation loads, last active at last
// to the microsecond, with want's turns byte for byte as stored.
func (f *fixture) check(last time.Time, want ...conversation.Turn) {
	f.tb.Helper()
	c := f.load()
	if c.Phone != f.phone || !c.LastActive.Equal(last) {
		f.tb.Fatalf("loaded %s last active %v, want %s at %v", c.Phone, c.LastActive, f.phone, last)
	}
	sameTurns(f.tb, c.Turns, want)
}

// checkTexts fails unless the phone's conversation loads with turns whose
// first messages' texts are want, joined by commas.
func (f *fixture) checkTexts(want string) {
	f.tb.Helper()
	if got := strings.Join(turnTexts(f.load()), ","); got != want {
		f.tb.Fatalf("loaded turns %q, want %s", got, want)
	}
}

// checkGone fails unless the phone has no conversation.
func (f *fixture) checkGone() {
	f.tb.Helper()
	if _, err := f.s.Load(f.ctx, f.phone); !errors.Is(err, conversation.ErrNotFound) {
		f.tb.Fatalf("Load: err = %v, want ErrNotFound", err)
	}
}

// keys returns the keys under the test's prefix, a test's own few.
func (f *fixture) keys() []string {
	f.tb.Helper()
	keys, err := f.rdb.Keys(f.ctx, f.prefix+"*").Result()
	if err != nil {
		f.tb.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// checkKeys fails unless the keys under the test's prefix are want's kinds
// of key of the phone (see key), in order: the older layouts' keys are gone
// and nothing else was written.
func (f *fixture) checkKeys(kinds ...string) {
	f.tb.Helper()
	var want []string
	for _, k := range kinds {
		want = append(want, f.key(k))
	}
	if got := f.keys(); !slices.Equal(got, want) {
		f.tb.Fatalf("keys %q, want %q", got, want)
	}
}

// checkTTL fails unless the TTL of the phone's hash is at most want and
// less than a minute below it.
func (f *fixture) checkTTL(want time.Duration) {
	f.tb.Helper()
	ttl, err := f.rdb.PTTL(f.ctx, f.key("chat:")).Result()
	if err != nil || ttl > want || ttl <= want-time.Minute {
		f.tb.Fatalf("TTL of %s = %v, %v; want %v", f.key("chat:"), ttl, err, want)
	}
}

// dump returns the keys under the test's prefix with their values as
// DUMP serializes them, for checkUnchanged.
func (f *fixture) dump() map[string]string {
	f.tb.Helper()
	out := map[string]string{}
	for _, k := range f.keys() {
		v, err := f.rdb.Dump(f.ctx, k).Result()
		if err != nil {
			f.tb.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// checkUnchanged fails unless the keys under the test's prefix and their
// values are as dump returned them before: nothing wrote them.
func (f *fixture) checkUnchanged(before map[string]string) {
	f.tb.Helper()
	if after := f.dump(); !maps.Equal(after, before) {
		f.tb.Fatalf("keys changed: %d keys %q, were %d %q", len(after), slices.Sorted(maps.Keys(after)), len(before), slices.Sorted(maps.Keys(before)))
	}
}

// toolTurn returns a valid turn with one tool call of id, asked by user.
func toolTurn(user, id string) conversation.Turn {
	return conversation.Turn{Messages: storetest.ToolTurn(user, id, "r", "ok")}
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

// other returns the fixture for another phone, on the same store.
func (f *fixture) other(phone string) *fixture {
	g := *f
	g.phone = phone
	return &g
}
