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
	storetest.Run(t, newStorage(t))
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
	f := newFixture(t, nil)
	now := storetest.Start
	tool := conversation.Turn{Messages: storetest.ToolTurn("find", "toolu_1", "found", "here")}
	f.save(now, lim, turn("hi", "hello"), tool)
	f.checkKeys("chat:")
	plain, err := turn("hi", "hello").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	withTool, err := tool.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	head, fields, values, n := stored(t, f.rdb, f.key("chat:"))
	if len(fields) != 2 || n != 3 {
		t.Fatalf("head %q, %d fields in all; want 2 turns and the head", head, n)
	}
	if fields[0] == fields[1] {
		t.Fatalf("turn fields %q, want two apart", fields)
	}
	for _, f := range fields {
		if !newFieldName.MatchString(f) {
			t.Fatalf("turn fields %q, want 11 characters of base64url each", fields)
		}
	}
	// The head: the format version, the last activity and the number of
	// turns, then a line per turn: its field and checksum, and its tool
	// ids' keys (the first 64 bits of the SHA-1 of "toolu_1").
	want := fmt.Sprintf("3 %d 2\n%s:%x\n%s:%x %s\n", now.UnixMicro(),
		fields[0], conversation.Checksum(plain), fields[1], conversation.Checksum(withTool), "040bc3d6655defe8")
	if head != want || !slices.Equal(values, []string{string(plain), string(withTool)}) {
		t.Fatalf("head %q, turns %q; want %q, %q", head, values, want, []string{string(plain), string(withTool)})
	}
}

// TestTTL shows that the hash gets the timeout as TTL, that every save
// renews it, and that Redis then removes the conversation on its own.
func TestTTL(t *testing.T) {
	f := newFixture(t, nil)
	lim := conversation.Limits{Timeout: 10 * time.Minute, MaxTurns: 10}
	f.save(time.Now(), lim, turn("one", "1"))
	f.checkTTL(lim.Timeout + time.Second)
	if err := f.rdb.PExpire(f.ctx, f.key("chat:"), 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	f.save(time.Now(), lim, turn("two", "2"))
	f.checkTTL(lim.Timeout + time.Second) // renewed

	// With a short timeout the conversation goes away without a sweeper.
	brief := f.other("+14155550000")
	brief.save(time.Now(), conversation.Limits{Timeout: 100 * time.Millisecond, MaxTurns: 10}, turn("brief", "ok"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := brief.s.Load(brief.ctx, brief.phone)
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
	f.checkKeys("chat:") // only the first phone's hash is left
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
	f := newFixture(t, &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	now := storetest.Start
	f.save(now, lim, turn("first", "ok"), turn("x", "ok"), turn("y", "ok"), turn("z", "ok"), turn("second", "ok"))
	_, fields, _, _ := stored(t, f.rdb, f.key("chat:"))
	for i, data := range []string{
		`{"messages":[{"role":"assistant","content":"a reply without a question"}]}`,
		`not JSON at all`,
		`{"usage":{}}`,
	} {
		if err := f.rdb.HSet(f.ctx, f.key("chat:"), fields[1+i], data).Err(); err != nil {
			t.Fatal(err)
		}
	}
	f.checkTexts("first,second")
	if l := logs.String(); !strings.Contains(l, "dropped=3") || strings.Contains(l, f.phone) {
		t.Fatalf("log = %q, want a warning with dropped=3 and the phone masked", l)
	}
	// A save goes on from what the head says, and the turns it keeps are
	// still read and checked.
	f.save(now, lim, turn("third", "ok"))
	f.checkTexts("first,second,third")

	// A head that is not one this version writes is no conversation:
	// Load finds none, and a save starts anew.
	if err := f.rdb.HSet(f.ctx, f.key("chat:"), "h", "3 yesterday\n").Err(); err != nil {
		t.Fatal(err)
	}
	f.checkGone()
	f.save(now, lim, turn("fresh", "ok"))
	f.checkTexts("fresh")
}

// TestWriteFailsWhole: a save or a Replace that Redis refuses, here
// because someone put a string where the conversation belongs, changes
// nothing, not even the key's TTL.
func TestWriteFailsWhole(t *testing.T) {
	tests := []struct {
		name, prefix string // prefix: of the error
		write        func(f *fixture) error
	}{
		{"append", "redis: append: ", func(f *fixture) error {
			return f.s.Append(f.ctx, f.phone, turn("two", "2"), storetest.Start.Add(time.Minute), lim)
		}},
		{"replace", "redis: replace: ", func(f *fixture) error {
			c := conversation.Conversation{Phone: f.phone, LastActive: storetest.Start.Add(time.Minute), Turns: []conversation.Turn{turn("two", "2")}}
			_, err := f.s.Replace(f.ctx, c, time.Hour)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			if err := f.rdb.Set(f.ctx, f.key("chat:"), "not a hash", time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			if err := tt.write(f); err == nil || !strings.HasPrefix(err.Error(), tt.prefix) {
				t.Fatalf("write over a string: err = %v, want one starting %q", err, tt.prefix)
			}
			if got, _ := f.rdb.Get(f.ctx, f.key("chat:")).Result(); got != "not a hash" {
				t.Fatalf("a failed write changed the string to %q", got)
			}
			if ttl, _ := f.rdb.PTTL(f.ctx, f.key("chat:")).Result(); ttl <= 59*time.Minute {
				t.Fatalf("a failed write changed the TTL to %v", ttl)
			}
			if _, err := f.s.Load(f.ctx, f.phone); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Fatalf("Load of a string: err = %v, want Redis's WRONGTYPE", err)
			}
		})
	}
}

func TestReplacer(t *testing.T) {
	storetest.RunReplacer(t, newStorage(t))
}

// TestReplaceTTL: the copied conversation expires like a saved one.
func TestReplaceTTL(t *testing.T) {
	f := newFixture(t, nil)
	c := conversation.Conversation{Phone: f.phone, LastActive: time.Now(), Turns: []conversation.Turn{turn("hi", "hello")}}
	if ok, err := f.s.Replace(f.ctx, c, 10*time.Minute); !ok || err != nil {
		t.Fatalf("Replace = %v, %v", ok, err)
	}
	f.checkTTL(10*time.Minute + time.Second)
}

// TestAppendDropsOrphanTurns: turns without a head (a hash whose head was
// removed by hand, or the oldest layout's turns without their last
// activity) are no conversation; a save starts a new one without them.
func TestAppendDropsOrphanTurns(t *testing.T) {
	f := newFixture(t, nil)
	old := f.other("+14155550000")
	now := storetest.Start
	f.save(now, lim, turn("stale1", "old"), turn("stale2", "old"))
	if err := f.rdb.HDel(f.ctx, f.key("chat:"), "h").Err(); err != nil {
		t.Fatal(err)
	}
	elem, err := turn("stale", "old").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.RPush(f.ctx, old.key("turns:"), elem).Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*fixture{f, old} {
		p.checkGone()
		p.save(now.Add(time.Minute), lim, turn("fresh", "new"))
		p.checkTexts("fresh")
		if _, _, _, n := stored(t, p.rdb, p.key("chat:")); n != 2 {
			t.Fatalf("%s: %d fields after a save over orphan turns, want the head and the new turn", p.phone, n)
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
	f := newFixture(t, &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	now := storetest.Start
	f.save(now, lim, turn("first", "ok"), turn("second", "ok"),
		conversation.Turn{Messages: storetest.ToolTurn("find", "toolu_old", "found", "here")})
	_, fields, values, _ := stored(t, f.rdb, f.key("chat:"))
	elem := values[1]
	// Same shape: only the checksum tells that it changed.
	edited := strings.Replace(elem, `{"role":"user","content":"second"}`, `{"role":"assistant","content":"second"}`, 1)
	if edited == elem {
		t.Fatalf("element %q does not hold the expected message", elem)
	}
	if err := f.rdb.HSet(f.ctx, f.key("chat:"), fields[1], edited).Err(); err != nil {
		t.Fatal(err)
	}
	f.checkTexts("first,find")
	if !strings.Contains(logs.String(), "dropped=1") {
		t.Fatalf("log = %q, want a warning with dropped=1", logs.String())
	}
	// A tool id of a kept turn reused.
	f.refuse(now, lim, conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_old", "found", "here")})
}

// twoCalls returns a valid turn whose assistant calls two tools at once,
// with ids first and second, in that order.
func twoCalls(first, second string) conversation.Turn {
	use := func(id string) []byte {
		return fmt.Appendf(nil, `{"type":"tool_use","id":%q,"name":"f","input":{}}`, id)
	}
	result := func(id, content string) []byte {
		return fmt.Appendf(nil, `{"type":"tool_result","tool_use_id":%q,"content":%q}`, id, content)
	}
	return conversation.Turn{Messages: []conversation.Message{
		conversation.UserText("two calls"),
		conversation.NewMessage(conversation.RoleAssistant, use(first), use(second)),
		conversation.NewMessage(conversation.RoleUser, result(first, "1"), result(second, "2")),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("done")),
	}}
}

// TestToolIDsMatchWhole: the append script refuses an id only when a kept
// turn has that very id: not one that is part of a longer id, nor one whose
// hex spells a kept turn's checksum; and it finds an id first, last or
// alone among a turn's ids.
func TestToolIDsMatchWhole(t *testing.T) {
	f := newFixture(t, nil)
	now := storetest.Start
	two := twoCalls("abc", "xyz")
	data, err := two.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := hex.DecodeString(fmt.Sprintf("%08x", conversation.Checksum(data)))
	for i, id := range []string{"ab", "bc", "xy", "yz", "abcxyz", string(sum), "abc", "xyz"} {
		p := f.other(fmt.Sprint("+1", i))
		p.save(now, lim, two)
		if id == "abc" || id == "xyz" { // a kept turn's
			p.refuse(now, lim, toolTurn("q", id))
		} else {
			p.save(now, lim, toolTurn("q", id))
		}
	}
}

// TestToolIDsAfterLongerOne: an id is refused when a kept turn has it
// after a longer id that starts with it, which the script's search passes
// over before finding the id itself.
func TestToolIDsAfterLongerOne(t *testing.T) {
	f := newFixture(t, nil)
	now := storetest.Start
	f.save(now, lim, twoCalls("abc", "ab"))
	f.refuse(now, lim, toolTurn("q", "ab"))
	f.save(now, lim, toolTurn("q", "a")) // part of kept ids only
}

// TestCapEdges: with a cap of one turn no turn stays next to a new one, so
// its tool ids are free again; with no cap (0) every turn stays, and so do
// their ids.
func TestCapEdges(t *testing.T) {
	f := newFixture(t, nil)
	now := storetest.Start
	one := conversation.Limits{Timeout: time.Hour, MaxTurns: 1}
	f.save(now, one, toolTurn("a", "toolu_1"), toolTurn("b", "toolu_1"))
	f.checkTexts("b")

	none, g := conversation.Limits{Timeout: time.Hour}, f.other("+2")
	for i := range 12 {
		g.save(now, none, toolTurn(fmt.Sprint(i), fmt.Sprint("toolu_", i)))
	}
	g.refuse(now, none, toolTurn("again", "toolu_0")) // the first turn's
	if c := g.load(); len(c.Turns) != 12 {
		t.Fatalf("no cap: Load = %d turns; want 12", len(c.Turns))
	}
}

// TestMissingField: a turn whose field was deleted by hand, its line still
// in the head, is left out with a warning; its line's tool ids still count
// as in use, and the next save goes on from the head.
func TestMissingField(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	now := storetest.Start
	f.save(now, lim, turn("first", "ok"), toolTurn("find", "toolu_gone"), turn("third", "ok"))
	_, fields, _, _ := stored(t, f.rdb, f.key("chat:"))
	if err := f.rdb.HDel(f.ctx, f.key("chat:"), fields[1]).Err(); err != nil {
		t.Fatal(err)
	}
	f.checkTexts("first,third")
	if !strings.Contains(logs.String(), "dropped=1") {
		t.Fatalf("log = %q, want a warning with dropped=1", logs.String())
	}
	f.refuse(now, lim, toolTurn("again", "toolu_gone"))
	f.save(now, lim, turn("fourth", "ok"))
	f.checkTexts("first,third,fourth")
}
