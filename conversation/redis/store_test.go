package redis_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/storetest"
)

func TestConformance(t *testing.T) {
	url := testURL(t)
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		prefix := newPrefix(t)
		return func() (conversation.Store, error) {
			return redis.Open(context.Background(), url, &redis.Options{Prefix: prefix, Logger: quiet})
		}
	})
}

func turn(user, reply string) conversation.Turn {
	return conversation.Turn{Messages: storetest.TextTurn(user, reply)}
}

var lim = conversation.Limits{Timeout: conversation.DefaultTimeout, MaxTurns: conversation.DefaultMaxTurns}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		url  string
	}{
		{"not a URL", "redis://[::1"},
		{"wrong scheme", "http://127.0.0.1:6379/0"},
		{"bad database", "redis://127.0.0.1:6379/zero"},
		{"nobody listening", "redis://127.0.0.1:1/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			s, err := redis.Open(ctx, tt.url, nil)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if !strings.HasPrefix(err.Error(), "redis: open") {
				t.Errorf("error %q does not start with \"redis: open\"", err)
			}
		})
	}
	t.Run("password not repeated", func(t *testing.T) {
		_, err := redis.Open(context.Background(), "redis://:s3cret@[::1/0", nil)
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("Open err = %v, want an error without the password", err)
		}
	})
}

func TestNotFound(t *testing.T) {
	s := open(t, newPrefix(t), nil)
	ctx := context.Background()
	if _, err := s.Load(ctx, "+1"); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("Load: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "+1"); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("Delete: err = %v, want ErrNotFound", err)
	}
	if err := s.Expire(ctx, "+1", time.Now()); err != nil {
		t.Errorf("Expire: err = %v, want nil", err)
	}
}

func TestKeys(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	now := storetest.Start
	if err := s.Append(ctx, "+14155551234", turn("hi", "hello"), now, lim); err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, prefix+"*").Result() // a test's own few keys
	if err != nil {
		t.Fatal(err)
	}
	want := []string{prefix + "ids:+14155551234", prefix + "last:+14155551234", prefix + "turns:+14155551234"}
	if strings.Join(slices.Sorted(slices.Values(keys)), " ") != strings.Join(want, " ") {
		t.Fatalf("keys = %q, want %q", keys, want)
	}
	want = want[1:]
	if got, _ := rdb.Get(ctx, want[0]).Result(); got != fmt.Sprint(now.UnixMicro()) {
		t.Errorf("last activity = %q, want %d", got, now.UnixMicro())
	}
	// The element is the turn's JSON behind a header member: the format
	// version, the checksum of the turn's JSON and its tool ids (none).
	data, err := turn("hi", "hello").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	wantElem := fmt.Sprintf(`{"_mombot":"1 %x",%s`, conversation.Checksum(data), data[1:])
	if got, _ := rdb.LRange(ctx, want[1], 0, -1).Result(); len(got) != 1 || got[0] != wantElem || !json.Valid([]byte(got[0])) {
		t.Errorf("turns = %q, want [%q]", got, wantElem)
	}
	// Beside it, the ids list: the same checksum and the tool ids (none).
	if got, _ := rdb.LRange(ctx, prefix+"ids:+14155551234", 0, -1).Result(); len(got) != 1 || got[0] != fmt.Sprintf("%x", conversation.Checksum(data)) {
		t.Errorf("ids = %q, want [%x]", got, conversation.Checksum(data))
	}
}

// TestTTL shows that the keys get the timeout as TTL, that every save
// renews it, and that Redis then removes the conversation on its own.
func TestTTL(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	keys := []string{prefix + "last:" + phone, prefix + "turns:" + phone, prefix + "ids:" + phone}
	lim := conversation.Limits{Timeout: 10 * time.Minute, MaxTurns: 10}

	checkTTL := func(when string) {
		t.Helper()
		for _, k := range keys {
			ttl, err := rdb.PTTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl <= 10*time.Minute-time.Minute || ttl > 10*time.Minute+time.Second {
				t.Errorf("%s: TTL of %s = %v, want the 10m timeout plus at most a second", when, strings.TrimPrefix(k, prefix), ttl)
			}
		}
	}
	if err := s.Append(ctx, phone, turn("one", "1"), time.Now(), lim); err != nil {
		t.Fatal(err)
	}
	checkTTL("after the first save")
	for _, k := range keys {
		if err := rdb.PExpire(ctx, k, 5*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, phone, turn("two", "2"), time.Now(), lim); err != nil {
		t.Fatal(err)
	}
	checkTTL("after a second save")

	// With a short timeout the conversation goes away without a sweeper.
	short := conversation.Limits{Timeout: 100 * time.Millisecond, MaxTurns: 10}
	if err := s.Append(ctx, "+14155550000", turn("brief", "ok"), time.Now(), short); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := s.Load(ctx, "+14155550000")
		if errors.Is(err, conversation.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the conversation is still there 5s after its 100ms timeout")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n, err := rdb.Exists(ctx, prefix+"last:+14155550000", prefix+"turns:+14155550000", prefix+"ids:+14155550000").Result(); err != nil || n != 0 {
		t.Fatalf("%d keys left after the TTL (err %v), want 0", n, err)
	}
}

// TestSaveRacingExpire runs saves against expiries of the state they
// replace, from two clients: whichever runs first, the conversation ends
// with the new turn, last active at its save, and never half deleted.
func TestSaveRacingExpire(t *testing.T) {
	prefix := newPrefix(t)
	a, b := open(t, prefix, nil), open(t, prefix, nil)
	ctx := context.Background()
	const phone = "+14155551234"
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 1000}
	now := storetest.Start
	if err := a.Append(ctx, phone, turn("q0", "a0"), now, lim); err != nil {
		t.Fatal(err)
	}
	restarted, kept := 0, 0
	for i := 1; i <= 200; i++ {
		old, err := a.Load(ctx, phone)
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Millisecond)
		var wg sync.WaitGroup
		var saveErr, expireErr error
		wg.Go(func() { saveErr = a.Append(ctx, phone, turn(fmt.Sprint("q", i), "a"), now, lim) })
		wg.Go(func() { expireErr = b.Expire(ctx, phone, old.LastActive) })
		wg.Wait()
		if saveErr != nil || expireErr != nil {
			t.Fatalf("round %d: save err %v, expire err %v", i, saveErr, expireErr)
		}
		c, err := b.Load(ctx, phone)
		if err != nil {
			t.Fatalf("round %d: the new turn was lost: %v", i, err)
		}
		if !c.LastActive.Equal(now) {
			t.Fatalf("round %d: last active %v, want %v", i, c.LastActive, now)
		}
		texts := turnTexts(c)
		switch {
		case len(texts) == 1 && texts[0] == fmt.Sprint("q", i):
			restarted++ // the expiry ran first
		case len(texts) == len(old.Turns)+1 && texts[len(texts)-1] == fmt.Sprint("q", i):
			kept++ // the save ran first; the stale expiry did nothing
		default:
			t.Fatalf("round %d: turns %q after a save racing an expiry of %d turns", i, texts, len(old.Turns))
		}
	}
	t.Logf("expiry first %d times, save first %d times", restarted, kept)
}

func turnTexts(c conversation.Conversation) []string {
	var out []string
	for _, tr := range c.Turns {
		out = append(out, tr.Messages[0].Text())
	}
	return out
}

// TestTwoClients saves from two stores, as two replicas would, for phones of
// their own and one they share: no turn is lost and each client's turns
// stay in its order.
func TestTwoClients(t *testing.T) {
	prefix := newPrefix(t)
	stores := []*redis.Store{open(t, prefix, nil), open(t, prefix, nil)}
	ctx := context.Background()
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 10_000}
	const workers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers*each*2)
	for r, s := range stores {
		for w := range workers {
			wg.Go(func() {
				own := fmt.Sprintf("+1%d%d", r, w)
				for i := range each {
					for _, phone := range []string{own, "+19999999999"} {
						if err := s.Append(ctx, phone, turn(fmt.Sprintf("r%d w%d i%d", r, w, i), "ok"), time.Now(), lim); err != nil {
							errs <- err
						}
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	shared, err := stores[0].Load(ctx, "+19999999999")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(shared.Turns), 2*workers*each; got != want {
		t.Fatalf("shared phone has %d turns, want %d: concurrent saves were lost", got, want)
	}
	next := map[string]int{} // per writer, the next i expected
	for _, text := range turnTexts(shared) {
		var r, w, i int
		if _, err := fmt.Sscanf(text, "r%d w%d i%d", &r, &w, &i); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprint(r, w)
		if i != next[key] {
			t.Fatalf("writer %s: turn %d stored where %d was expected", key, i, next[key])
		}
		next[key]++
	}
	for r := range stores {
		for w := range workers {
			c, err := stores[1-r].Load(ctx, fmt.Sprintf("+1%d%d", r, w))
			if err != nil || len(c.Turns) != each {
				t.Fatalf("phone of replica %d worker %d: %d turns, err %v; want %d", r, w, len(c.Turns), err, each)
			}
		}
	}
}

// TestListScans lists more conversations than one SCAN step returns, under
// a prefix with glob characters, next to another prefix's keys.
func TestListScans(t *testing.T) {
	prefix := newPrefix(t) + "[*?]:"
	other := newPrefix(t)
	s, o := open(t, prefix, nil), open(t, other, nil)
	ctx := context.Background()
	rdb := rawClient(t)
	const n = 2500
	pipe := rdb.Pipeline()
	for i := range n {
		pipe.Set(ctx, fmt.Sprintf("%slast:+1%06d", prefix, i), storetest.Start.UnixMicro(), time.Hour)
		pipe.RPush(ctx, fmt.Sprintf("%sturns:+1%06d", prefix, i), `{"messages":[]}`)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := o.Append(ctx, "+2", turn("other", "prefix"), time.Now(), lim); err != nil {
		t.Fatal(err)
	}
	sums, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != n {
		t.Fatalf("List returned %d conversations, want %d", len(sums), n)
	}
	for i, sum := range sums {
		if want := fmt.Sprintf("+1%06d", i); sum.Phone != want || sum.Turns != 1 || !sum.LastActive.Equal(storetest.Start) {
			t.Fatalf("List[%d] = %+v, want %s with 1 turn at %v", i, sum, want, storetest.Start)
		}
	}
	if sums, err := o.List(ctx); err != nil || len(sums) != 1 || sums[0].Phone != "+2" {
		t.Fatalf("the other prefix lists %v, %v; want only +2", sums, err)
	}
}

func TestCorruptDataRepaired(t *testing.T) {
	var logs bytes.Buffer
	prefix := newPrefix(t)
	s := open(t, prefix, &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	now := storetest.Start
	if err := s.Append(ctx, phone, turn("first", "one"), now, lim); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{
		`{"messages":[{"role":"assistant","content":"a reply without a question"}]}`,
		`not JSON at all`,
		`{"usage":{}}`,
	} {
		if err := rdb.RPush(ctx, prefix+"turns:"+phone, data).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, phone, turn("second", "two"), now, lim); err != nil {
		t.Fatal(err)
	}
	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(turnTexts(c), ","); got != "first,second" {
		t.Fatalf("Load kept turns %q, want first,second", got)
	}
	if l := logs.String(); !strings.Contains(l, "dropped=3") || strings.Contains(l, phone) {
		t.Fatalf("log = %q, want a warning with dropped=3 and the phone masked", l)
	}

	// A last activity that is not a number counts as long expired: a
	// Memory drops the conversation, and a save starts anew.
	if err := rdb.Set(ctx, prefix+"last:"+phone, "yesterday", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	mem, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := mem.History(ctx, phone); err != nil || len(h) != 0 {
		t.Fatalf("History with a corrupt last activity = %d messages, %v; want none", len(h), err)
	}
	if _, err := s.Load(ctx, phone); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Load after History expired it: err = %v, want ErrNotFound", err)
	}
}

// TestAppendFailsWhole: a save that Redis refuses half way, here because
// someone put a string where the turns belong, changes nothing.
func TestAppendFailsWhole(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	if err := s.Append(ctx, phone, turn("one", "1"), storetest.Start, lim); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, prefix+"turns:"+phone, "not a list", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	err := s.Append(ctx, phone, turn("two", "2"), storetest.Start.Add(time.Minute), lim)
	if err == nil || !strings.HasPrefix(err.Error(), "redis: append: ") {
		t.Fatalf("Append over a string: err = %v, want a redis: append error", err)
	}
	if got, _ := rdb.Get(ctx, prefix+"last:"+phone).Result(); got != fmt.Sprint(storetest.Start.UnixMicro()) {
		t.Fatalf("a failed Append changed the last activity to %s", got)
	}
}

func TestReplacer(t *testing.T) {
	url := testURL(t)
	storetest.RunReplacer(t, func(t *testing.T) storetest.Opener {
		prefix := newPrefix(t)
		return func() (conversation.Store, error) {
			return redis.Open(context.Background(), url, &redis.Options{Prefix: prefix, Logger: quiet})
		}
	})
}

// TestReplaceTTL: the copied conversation's keys expire like a saved one's.
func TestReplaceTTL(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	c := conversation.Conversation{Phone: phone, LastActive: time.Now(), Turns: []conversation.Turn{turn("hi", "hello")}}
	if ok, err := s.Replace(ctx, c, 10*time.Minute); !ok || err != nil {
		t.Fatalf("Replace = %v, %v", ok, err)
	}
	for _, k := range []string{prefix + "last:" + phone, prefix + "turns:" + phone} {
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil || ttl <= 9*time.Minute || ttl > 10*time.Minute+time.Second {
			t.Errorf("TTL of %s = %v (err %v), want the 10m timeout plus at most a second", strings.TrimPrefix(k, prefix), ttl, err)
		}
	}
}

// TestReplaceFailsWhole: a Replace that Redis refuses, here because someone
// put a string where the turns belong, changes nothing.
func TestReplaceFailsWhole(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	if err := s.Append(ctx, phone, turn("one", "1"), storetest.Start, lim); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, prefix+"turns:"+phone, "not a list", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	c := conversation.Conversation{Phone: phone, LastActive: storetest.Start.Add(time.Minute), Turns: []conversation.Turn{turn("two", "2")}}
	if _, err := s.Replace(ctx, c, time.Hour); err == nil || !strings.HasPrefix(err.Error(), "redis: replace: ") {
		t.Fatalf("Replace over a string: err = %v, want a redis: replace error", err)
	}
	if got, _ := rdb.Get(ctx, prefix+"last:"+phone).Result(); got != fmt.Sprint(storetest.Start.UnixMicro()) {
		t.Fatalf("a failed Replace changed the last activity to %s", got)
	}
}

// TestAppendDropsOrphanTurns: turns whose last activity key is gone (evicted
// by maxmemory, deleted by hand) are no conversation; a save starts a new
// one without them.
func TestAppendDropsOrphanTurns(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	now := storetest.Start
	for _, text := range []string{"stale1", "stale2"} {
		if err := s.Append(ctx, phone, turn(text, "old"), now, lim); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Del(ctx, prefix+"last:"+phone).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, phone); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Load without the last activity: err = %v, want ErrNotFound", err)
	}
	if err := s.Append(ctx, phone, turn("fresh", "new"), now.Add(time.Minute), lim); err != nil {
		t.Fatal(err)
	}
	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(turnTexts(c), ","); got != "fresh" {
		t.Fatalf("turns after a save over orphan turns = %q, want only fresh", got)
	}
}

// TestOpenUnreachable: with AllowUnreachable, a store opens while Redis is
// down, says so in the log, fails its calls, and works once Redis is up.
func TestOpenUnreachable(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH: the test needs a Redis of its own to start")
	}
	port := freePort(t)
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	ctx := context.Background()
	if s, err := redis.Open(ctx, url, &redis.Options{Logger: quiet}); err == nil {
		s.Close()
		t.Fatal("Open of a Redis that is down succeeded without AllowUnreachable")
	}
	var logs bytes.Buffer
	s, err := redis.Open(ctx, url, &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), AllowUnreachable: true, Prefix: "mombot-test:down:"})
	if err != nil {
		t.Fatalf("Open with AllowUnreachable: %v", err)
	}
	defer s.Close()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "not answering") {
		t.Errorf("log = %q, want a warning that Redis does not answer", logs.String())
	}
	const phone = "+14155551234"
	if err := s.Append(ctx, phone, turn("lost", "x"), storetest.Start, lim); err == nil {
		t.Fatal("Append succeeded with Redis down")
	}
	if err := s.Ping(ctx); err == nil {
		t.Fatal("Ping succeeded with Redis down")
	}

	startServer(t, port)
	for deadline := time.Now().Add(15 * time.Second); s.Ping(ctx) != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the store did not reach Redis once it was up")
		}
	}
	if err := s.Append(ctx, phone, turn("kept", "y"), storetest.Start, lim); err != nil {
		t.Fatal(err)
	}
	c, err := s.Load(ctx, phone)
	if err != nil || strings.Join(turnTexts(c), ",") != "kept" {
		t.Fatalf("Load = %q, %v; want the turn saved once Redis was up", turnTexts(c), err)
	}
}

// TestCallsFailWithoutRetry: a call to a Redis that takes commands but
// never answers (hung, or its replies lost) fails after one attempt. go-redis
// would otherwise send it again on a new connection, up to three times, each
// after a full read timeout; and a save whose reply was lost may have run, so
// sending it again could store the turn twice.
func TestCallsFailWithoutRetry(t *testing.T) {
	srv := newSilentServer(t)
	ctx := context.Background()
	s, err := redis.Open(ctx, "redis://"+srv.addr()+"/0", &redis.Options{Logger: quiet, AllowUnreachable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := srv.calls("PING"); got != 1 {
		t.Fatalf("Open sent PING %d times to a server that does not answer, want once", got)
	}
	if err := s.Append(ctx, "+1", turn("q", "a"), storetest.Start, lim); err == nil {
		t.Fatal("Append to a server that does not answer succeeded")
	}
	if got := srv.calls("EVALSHA"); got != 1 {
		t.Fatalf("Append sent its script %d times, want once", got)
	}
}

// answer makes the server send reply, raw, to every cmd.
func (srv *silentServer) answer(cmd, reply string) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.replies == nil {
		srv.replies = map[string]string{}
	}
	srv.replies[cmd] = reply
}

// silentServer speaks just enough of the Redis protocol for a client to
// connect (HELLO is refused, so the client falls back to RESP2; CLIENT
// SETINFO is accepted) and then never answers a command. It counts the
// commands it receives.
type silentServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	seen  map[string]int
	// replies maps a command to the raw reply the server sends to it, if
	// it is to answer it.
	replies map[string]string
}

func newSilentServer(t *testing.T) *silentServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &silentServer{ln: ln, seen: map[string]int{}}
	go srv.serve()
	t.Cleanup(func() {
		ln.Close()
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for _, c := range srv.conns {
			c.Close()
		}
	})
	return srv
}

func (srv *silentServer) addr() string { return srv.ln.Addr().String() }

func (srv *silentServer) calls(cmd string) int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.seen[cmd]
}

func (srv *silentServer) serve() {
	for {
		c, err := srv.ln.Accept()
		if err != nil {
			return
		}
		srv.mu.Lock()
		srv.conns = append(srv.conns, c)
		srv.mu.Unlock()
		go srv.handle(c)
	}
}

// handle reads commands, arrays of bulk strings, from c.
func (srv *silentServer) handle(c net.Conn) {
	r := bufio.NewReader(c)
	line := func() string {
		l, _ := r.ReadString('\n')
		return strings.TrimRight(l, "\r\n")
	}
	for {
		head := line()
		if !strings.HasPrefix(head, "*") {
			return
		}
		n, _ := strconv.Atoi(head[1:])
		var args []string
		for range n {
			size, _ := strconv.Atoi(strings.TrimPrefix(line(), "$"))
			buf := make([]byte, size+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return
			}
			args = append(args, string(buf[:size]))
		}
		if len(args) == 0 {
			return
		}
		cmd := strings.ToUpper(args[0])
		srv.mu.Lock()
		srv.seen[cmd]++
		reply, ok := srv.replies[cmd]
		srv.mu.Unlock()
		if ok {
			io.WriteString(c, reply)
			continue
		}
		switch cmd {
		case "HELLO":
			io.WriteString(c, "-ERR unknown command 'HELLO'\r\n")
		case "CLIENT":
			io.WriteString(c, "+OK\r\n")
		}
	}
}

// TestEditedAndOldElements: an element changed since it was saved (its
// checksum no longer matches) is decoded and validated, and dropped when
// invalid; the tool ids of an element from an older version (no header)
// are read from its JSON by the append script.
func TestEditedAndOldElements(t *testing.T) {
	var logs bytes.Buffer
	prefix := newPrefix(t)
	s := open(t, prefix, &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "turns:" + phone
	now := storetest.Start
	for _, text := range []string{"first", "second"} {
		if err := s.Append(ctx, phone, turn(text, "ok"), now, lim); err != nil {
			t.Fatal(err)
		}
	}
	elem, err := rdb.LIndex(ctx, key, 1).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Same header, same shape: only the checksum tells that it changed.
	edited := strings.Replace(elem, `{"role":"user","content":"second"}`, `{"role":"assistant","content":"second"}`, 1)
	if edited == elem {
		t.Fatalf("element %q does not hold the expected message", elem)
	}
	if err := rdb.LSet(ctx, key, 1, edited).Err(); err != nil {
		t.Fatal(err)
	}
	old := conversation.Turn{Messages: storetest.ToolTurn("find", "toolu_old", "found", "here")}
	data, err := old.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.RPush(ctx, key, data).Err(); err != nil {
		t.Fatal(err)
	}
	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(turnTexts(c), ","); got != "first,find" {
		t.Fatalf("Load kept turns %q, want first,find", got)
	}
	if c.Turns[1].Extra != nil {
		t.Fatalf("the old element's turn has extra keys %v", c.Turns[1].Extra)
	}
	if !strings.Contains(logs.String(), "dropped=1") {
		t.Fatalf("log = %q, want a warning with dropped=1", logs.String())
	}
	again := conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_old", "found", "here")}
	if err := s.Append(ctx, phone, again, now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("a tool id of an old element reused: Append err = %v, want ErrInvalidTurn", err)
	}
	if n, _ := rdb.LLen(ctx, key).Result(); n != 3 {
		t.Fatalf("a refused append left %d elements, want 3", n)
	}
	// The next save builds the ids list again, in step with the turns, and
	// the one after reads it.
	for _, id := range []string{"toolu_new", "toolu_newer"} {
		if err := s.Append(ctx, phone, conversation.Turn{Messages: storetest.ToolTurn("new", id, "r", "ok")}, now, lim); err != nil {
			t.Fatal(err)
		}
	}
	ids, _ := rdb.LRange(ctx, prefix+"ids:"+phone, 0, -1).Result()
	if len(ids) != 5 || !strings.HasPrefix(ids[2], "- ") || !strings.HasSuffix(ids[4], " "+hex.EncodeToString([]byte("toolu_newer"))) {
		t.Fatalf("ids list = %q, want 5 entries in step with the turns", ids)
	}
	if err := s.Append(ctx, phone, conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_new", "r", "ok")}, now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("a reused id read from the ids list: Append err = %v, want ErrInvalidTurn", err)
	}
}

// TestOlderVersionReadsElements: an element with the header member is still
// a turn to a reader that knows nothing of it, with one more extra key.
func TestOlderVersionReadsElements(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	want := conversation.Turn{Messages: storetest.ToolTurn("find", "toolu_1", "found", "here")}
	if err := s.Append(ctx, "+1", want, storetest.Start, lim); err != nil {
		t.Fatal(err)
	}
	elem, err := rdb.LIndex(ctx, prefix+"turns:+1", 0).Result()
	if err != nil {
		t.Fatal(err)
	}
	var got conversation.Turn
	if err := json.Unmarshal([]byte(elem), &got); err != nil {
		t.Fatal(err)
	}
	if err := conversation.ValidateTurn(got.Messages); err != nil || len(got.Messages) != 4 || len(got.Extra) != 1 {
		t.Fatalf("decoded as %d messages (%v), extra %v", len(got.Messages), err, got.Extra)
	}
	for i := range got.Messages {
		if !got.Messages[i].Equal(want.Messages[i]) {
			t.Fatalf("message %d = %s, want %s", i, got.Messages[i].Content, want.Messages[i].Content)
		}
	}
}

// TestToolIDsMatchWhole: the append script refuses an id only when a kept
// turn has that very id: not one that is part of a longer id, nor one whose
// hex spells a kept turn's checksum; and it finds an id first, last or
// alone among a turn's ids.
func TestToolIDsMatchWhole(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	now := storetest.Start
	two := conversation.Turn{Messages: []conversation.Message{
		conversation.UserText("two calls"),
		conversation.NewMessage(conversation.RoleAssistant,
			[]byte(`{"type":"tool_use","id":"abc","name":"f","input":{}}`),
			[]byte(`{"type":"tool_use","id":"xyz","name":"f","input":{}}`)),
		conversation.NewMessage(conversation.RoleUser,
			[]byte(`{"type":"tool_result","tool_use_id":"abc","content":"1"}`),
			[]byte(`{"type":"tool_result","tool_use_id":"xyz","content":"2"}`)),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("done")),
	}}
	if err := s.Append(ctx, phone, two, now, lim); err != nil {
		t.Fatal(err)
	}
	entries, err := rdb.LRange(ctx, prefix+"ids:"+phone, 0, -1).Result()
	if err != nil || len(entries) != 1 {
		t.Fatalf("ids list = %q, %v", entries, err)
	}
	sum, _ := hex.DecodeString(strings.Fields(entries[0])[0])
	for _, id := range []string{"ab", "bc", "xy", "yz", "abcxyz", string(sum)} {
		if id == "" {
			continue
		}
		if err := s.Append(ctx, phone, conversation.Turn{Messages: storetest.ToolTurn("q", id, "r", "ok")}, now, lim); err != nil {
			t.Fatalf("id %q is no kept turn's: Append err = %v", id, err)
		}
		// Back to the one turn with abc and xyz.
		if err := rdb.RPop(ctx, prefix+"turns:"+phone).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.RPop(ctx, prefix+"ids:"+phone).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"abc", "xyz"} {
		if err := s.Append(ctx, phone, conversation.Turn{Messages: storetest.ToolTurn("q", id, "r", "ok")}, now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
			t.Fatalf("id %q reused: Append err = %v, want ErrInvalidTurn", id, err)
		}
	}
}

// TestOlderVersionPushIntoFullConversation: an older version that pushes a
// turn into a full conversation and trims the oldest leaves the turns list
// as long as the ids list; the append script tells from the last turn's
// checksum that the ids list is out of step, builds it again, and refuses
// a reuse of the older version's tool id.
func TestOlderVersionPushIntoFullConversation(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "turns:" + phone
	small := conversation.Limits{Timeout: time.Hour, MaxTurns: 3}
	now := storetest.Start
	for _, text := range []string{"a", "b", "c"} {
		if err := s.Append(ctx, phone, turn(text, "ok"), now, small); err != nil {
			t.Fatal(err)
		}
	}
	// What an older version's save does: push the turn's JSON, without
	// the header, and trim to the cap; it knows nothing of the ids list.
	old, err := conversation.Turn{Messages: storetest.ToolTurn("find", "toolu_old", "found", "here")}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.RPush(ctx, key, old).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.LTrim(ctx, key, -3, -1).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.LLen(ctx, prefix+"ids:"+phone).Result(); n != 3 {
		t.Fatalf("ids list has %d entries, want 3 (as many as the turns)", n)
	}
	again := conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_old", "found", "here")}
	if err := s.Append(ctx, phone, again, now, small); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("the older version's tool id reused: Append err = %v, want ErrInvalidTurn", err)
	}
}
