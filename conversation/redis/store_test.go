package redis_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
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

// TestKeys: a conversation is one hash, its head and a field per turn,
// each turn's value exactly its JSON as Turn.MarshalJSON writes it.
func TestKeys(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	now := storetest.Start
	tool := conversation.Turn{Messages: storetest.ToolTurn("find", "toolu_1", "found", "here")}
	for _, tr := range []conversation.Turn{turn("hi", "hello"), tool} {
		if err := s.Append(ctx, "+14155551234", tr, now, lim); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := rdb.Keys(ctx, prefix+"*").Result() // a test's own few keys
	if err != nil {
		t.Fatal(err)
	}
	if want := prefix + "chat:+14155551234"; len(keys) != 1 || keys[0] != want {
		t.Fatalf("keys = %q, want [%q]", keys, want)
	}
	plain, err := turn("hi", "hello").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	withTool, err := tool.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	head, fields, values, n := stored(t, rdb, keys[0])
	if len(fields) != 2 || n != 3 {
		t.Fatalf("head %q, %d fields in all; want 2 turns and the head", head, n)
	}
	for _, f := range fields {
		if len(f) != 16 || strings.Trim(f, "0123456789abcdef") != "" || f == fields[0] && f == fields[1] {
			t.Fatalf("turn fields %q, want two of 16 hex digits", fields)
		}
	}
	// The head: the format version, the last activity and the number of
	// turns, then a line per turn: its field and checksum, and its tool
	// ids, hex.
	want := fmt.Sprintf("3 %d 2\n%s:%x\n%s:%x %x\n", now.UnixMicro(),
		fields[0], conversation.Checksum(plain), fields[1], conversation.Checksum(withTool), "toolu_1")
	if head != want || !slices.Equal(values, []string{string(plain), string(withTool)}) {
		t.Fatalf("head %q, turns %q; want %q, %q", head, values, want, []string{string(plain), string(withTool)})
	}
}

// TestTTL shows that the list gets the timeout as TTL, that every save
// renews it, and that Redis then removes the conversation on its own.
func TestTTL(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "chat:" + phone
	lim := conversation.Limits{Timeout: 10 * time.Minute, MaxTurns: 10}

	checkTTL := func(when string) {
		t.Helper()
		ttl, err := rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 10*time.Minute-time.Minute || ttl > 10*time.Minute+time.Second {
			t.Errorf("%s: TTL = %v, want the 10m timeout plus at most a second", when, ttl)
		}
	}
	if err := s.Append(ctx, phone, turn("one", "1"), time.Now(), lim); err != nil {
		t.Fatal(err)
	}
	checkTTL("after the first save")
	if err := rdb.PExpire(ctx, key, 5*time.Second).Err(); err != nil {
		t.Fatal(err)
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
	if n, err := rdb.Exists(ctx, prefix+"chat:+14155550000").Result(); err != nil || n != 0 {
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

// TestCorruptDataRepaired: elements changed by another program are
// decoded and validated, and dropped when invalid, with a warning that
// does not show the number.
func TestCorruptDataRepaired(t *testing.T) {
	var logs bytes.Buffer
	prefix := newPrefix(t)
	s := open(t, prefix, &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "chat:" + phone
	now := storetest.Start
	for _, text := range []string{"first", "x", "y", "z", "second"} {
		if err := s.Append(ctx, phone, turn(text, "ok"), now, lim); err != nil {
			t.Fatal(err)
		}
	}
	_, fields, _, _ := stored(t, rdb, key)
	for i, data := range []string{
		`{"messages":[{"role":"assistant","content":"a reply without a question"}]}`,
		`not JSON at all`,
		`{"usage":{}}`,
	} {
		if err := rdb.HSet(ctx, key, fields[1+i], data).Err(); err != nil {
			t.Fatal(err)
		}
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
	// A save goes on from what the head says, and the turns it keeps are
	// still read and checked.
	if err := s.Append(ctx, phone, turn("third", "ok"), now, lim); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Load(ctx, phone); err != nil || strings.Join(turnTexts(c), ",") != "first,second,third" {
		t.Fatalf("Load after a save = %q, %v; want first,second,third", turnTexts(c), err)
	}

	// A head that is not one this version writes is no conversation:
	// Load finds none, and a save starts anew.
	if err := rdb.HSet(ctx, key, "h", "3 yesterday\n").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, phone); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Load with a corrupt head: err = %v, want ErrNotFound", err)
	}
	if err := s.Append(ctx, phone, turn("fresh", "ok"), now, lim); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Load(ctx, phone); err != nil || strings.Join(turnTexts(c), ",") != "fresh" {
		t.Fatalf("Load after a save over a corrupt head = %q, %v; want fresh", turnTexts(c), err)
	}
}

// TestAppendFailsWhole: a save that Redis refuses, here because someone
// put a string where the conversation belongs, changes nothing, not even
// the key's TTL.
func TestAppendFailsWhole(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "chat:" + phone
	if err := rdb.Set(ctx, key, "not a hash", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	err := s.Append(ctx, phone, turn("two", "2"), storetest.Start.Add(time.Minute), lim)
	if err == nil || !strings.HasPrefix(err.Error(), "redis: append: ") {
		t.Fatalf("Append over a string: err = %v, want a redis: append error", err)
	}
	if got, _ := rdb.Get(ctx, key).Result(); got != "not a hash" {
		t.Fatalf("a failed Append changed the string to %q", got)
	}
	if ttl, _ := rdb.PTTL(ctx, key).Result(); ttl <= 59*time.Minute {
		t.Fatalf("a failed Append changed the TTL to %v", ttl)
	}
	if _, err := s.Load(ctx, phone); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("Load of a string: err = %v, want Redis's WRONGTYPE", err)
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

// TestReplaceTTL: the copied conversation expires like a saved one.
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
	ttl, err := rdb.PTTL(ctx, prefix+"chat:"+phone).Result()
	if err != nil || ttl <= 9*time.Minute || ttl > 10*time.Minute+time.Second {
		t.Errorf("TTL = %v (err %v), want the 10m timeout plus at most a second", ttl, err)
	}
}

// TestReplaceFailsWhole: a Replace that Redis refuses, here because someone
// put a string where the conversation belongs, changes nothing.
func TestReplaceFailsWhole(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	if err := rdb.Set(ctx, prefix+"chat:"+phone, "not a hash", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	c := conversation.Conversation{Phone: phone, LastActive: storetest.Start.Add(time.Minute), Turns: []conversation.Turn{turn("two", "2")}}
	if _, err := s.Replace(ctx, c, time.Hour); err == nil || !strings.HasPrefix(err.Error(), "redis: replace: ") {
		t.Fatalf("Replace over a string: err = %v, want a redis: replace error", err)
	}
	if got, _ := rdb.Get(ctx, prefix+"chat:"+phone).Result(); got != "not a hash" {
		t.Fatalf("a failed Replace changed the string to %q", got)
	}
}

// TestAppendDropsOrphanTurns: turns without a head (a hash whose head was
// removed by hand, or the oldest layout's turns without their last
// activity) are no conversation; a save starts a new one without them.
func TestAppendDropsOrphanTurns(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	now := storetest.Start
	const phone, old = "+14155551234", "+14155550000"
	for _, text := range []string{"stale1", "stale2"} {
		if err := s.Append(ctx, phone, turn(text, "old"), now, lim); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.HDel(ctx, prefix+"chat:"+phone, "h").Err(); err != nil {
		t.Fatal(err)
	}
	elem, err := turn("stale", "old").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.RPush(ctx, prefix+"turns:"+old, elem).Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{phone, old} {
		if _, err := s.Load(ctx, p); !errors.Is(err, conversation.ErrNotFound) {
			t.Fatalf("%s: Load of turns without a head: err = %v, want ErrNotFound", p, err)
		}
		if err := s.Append(ctx, p, turn("fresh", "new"), now.Add(time.Minute), lim); err != nil {
			t.Fatal(err)
		}
		c, err := s.Load(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(turnTexts(c), ","); got != "fresh" {
			t.Fatalf("%s: turns after a save over orphan turns = %q, want only fresh", p, got)
		}
		if _, _, _, n := stored(t, rdb, prefix+"chat:"+p); n != 2 {
			t.Fatalf("%s: %d fields after a save over orphan turns, want the head and the new turn", p, n)
		}
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

// TestEditedElement: an element changed since it was saved (its checksum
// no longer matches its head line) is decoded and validated, and dropped
// when invalid; the tool ids of the turns are still read from the head.
func TestEditedElement(t *testing.T) {
	var logs bytes.Buffer
	prefix := newPrefix(t)
	s := open(t, prefix, &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "chat:" + phone
	now := storetest.Start
	for _, tr := range []conversation.Turn{turn("first", "ok"), turn("second", "ok"),
		{Messages: storetest.ToolTurn("find", "toolu_old", "found", "here")}} {
		if err := s.Append(ctx, phone, tr, now, lim); err != nil {
			t.Fatal(err)
		}
	}
	_, fields, values, _ := stored(t, rdb, key)
	elem := values[1]
	// Same shape: only the checksum tells that it changed.
	edited := strings.Replace(elem, `{"role":"user","content":"second"}`, `{"role":"assistant","content":"second"}`, 1)
	if edited == elem {
		t.Fatalf("element %q does not hold the expected message", elem)
	}
	if err := rdb.HSet(ctx, key, fields[1], edited).Err(); err != nil {
		t.Fatal(err)
	}
	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(turnTexts(c), ","); got != "first,find" {
		t.Fatalf("Load kept turns %q, want first,find", got)
	}
	if !strings.Contains(logs.String(), "dropped=1") {
		t.Fatalf("log = %q, want a warning with dropped=1", logs.String())
	}
	again := conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_old", "found", "here")}
	if err := s.Append(ctx, phone, again, now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("a tool id of a kept turn reused: Append err = %v, want ErrInvalidTurn", err)
	}
}

// TestToolIDsMatchWhole: the append script refuses an id only when a kept
// turn has that very id: not one that is part of a longer id, nor one whose
// hex spells a kept turn's checksum; and it finds an id first, last or
// alone among a turn's ids.
func TestToolIDsMatchWhole(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	ctx := context.Background()
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
	data, err := two.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := hex.DecodeString(fmt.Sprintf("%08x", conversation.Checksum(data)))
	for i, id := range []string{"ab", "bc", "xy", "yz", "abcxyz", string(sum), "abc", "xyz"} {
		phone := fmt.Sprint("+1", i)
		if err := s.Append(ctx, phone, two, now, lim); err != nil {
			t.Fatal(err)
		}
		err := s.Append(ctx, phone, conversation.Turn{Messages: storetest.ToolTurn("q", id, "r", "ok")}, now, lim)
		if reused := id == "abc" || id == "xyz"; reused != errors.Is(err, conversation.ErrInvalidTurn) {
			t.Fatalf("id %q (a kept turn's: %v): Append err = %v", id, reused, err)
		}
	}
}

// TestToolIDsAfterLongerOne: an id is refused when a kept turn has it
// after a longer id that starts with it, which the script's search passes
// over before finding the id itself.
func TestToolIDsAfterLongerOne(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	ctx := context.Background()
	now := storetest.Start
	kept := conversation.Turn{Messages: []conversation.Message{
		conversation.UserText("two calls"),
		conversation.NewMessage(conversation.RoleAssistant,
			[]byte(`{"type":"tool_use","id":"abc","name":"f","input":{}}`),
			[]byte(`{"type":"tool_use","id":"ab","name":"f","input":{}}`)),
		conversation.NewMessage(conversation.RoleUser,
			[]byte(`{"type":"tool_result","tool_use_id":"abc","content":"1"}`),
			[]byte(`{"type":"tool_result","tool_use_id":"ab","content":"2"}`)),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("done")),
	}}
	if err := s.Append(ctx, "+1", kept, now, lim); err != nil {
		t.Fatal(err)
	}
	err := s.Append(ctx, "+1", conversation.Turn{Messages: storetest.ToolTurn("q", "ab", "r", "ok")}, now, lim)
	if !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("id %q after %q in a kept turn: Append err = %v, want ErrInvalidTurn", "ab", "abc", err)
	}
	if err := s.Append(ctx, "+1", conversation.Turn{Messages: storetest.ToolTurn("q", "a", "r", "ok")}, now, lim); err != nil {
		t.Fatalf("id %q, part of kept ids only: Append err = %v", "a", err)
	}
}

// TestCapEdges: with a cap of one turn no turn stays next to a new one, so
// its tool ids are free again; with no cap (0) every turn stays, and so do
// their ids.
func TestCapEdges(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	ctx := context.Background()
	now := storetest.Start
	tool := func(user, id string) conversation.Turn {
		return conversation.Turn{Messages: storetest.ToolTurn(user, id, "r", "ok")}
	}
	one := conversation.Limits{Timeout: time.Hour, MaxTurns: 1}
	for _, user := range []string{"a", "b"} {
		if err := s.Append(ctx, "+1", tool(user, "toolu_1"), now, one); err != nil {
			t.Fatalf("cap 1, turn %s: %v", user, err)
		}
	}
	if c, err := s.Load(ctx, "+1"); err != nil || strings.Join(turnTexts(c), ",") != "b" {
		t.Fatalf("cap 1: Load = %q, %v; want b", turnTexts(c), err)
	}
	none := conversation.Limits{Timeout: time.Hour}
	for i := range 12 {
		if err := s.Append(ctx, "+2", tool(fmt.Sprint(i), fmt.Sprint("toolu_", i)), now, none); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, "+2", tool("again", "toolu_0"), now, none); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("no cap, the first turn's id reused: Append err = %v, want ErrInvalidTurn", err)
	}
	if c, err := s.Load(ctx, "+2"); err != nil || len(c.Turns) != 12 {
		t.Fatalf("no cap: Load = %d turns, %v; want 12", len(c.Turns), err)
	}
}
