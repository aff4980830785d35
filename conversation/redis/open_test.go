package redis_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
)

// TestOpenUnreachableOnlyForNetworkErrors: AllowUnreachable lets Open go on
// when Redis cannot be reached, or answers that it is starting, but not when
// Redis answers that the URL is wrong (a password, a database index), which
// waiting would never mend.
func TestOpenUnreachableOnlyForNetworkErrors(t *testing.T) {
	base, err := neturl.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	wrong := func(edit func(u *neturl.URL)) string {
		u := *base
		edit(&u)
		return u.String()
	}
	cases := map[string]string{
		// An unknown user: Redis answers WRONGPASS.
		"wrong user and password": wrong(func(u *neturl.URL) { u.User = neturl.UserPassword("nobody-mombot-test", "not-the-password") }),
		"database out of range":   wrong(func(u *neturl.URL) { u.Path = "/100000" }),
	}
	// A Redis without a password takes any password for its default user
	// (go-redis sends HELLO 3 AUTH default PASSWORD), so a wrong password
	// alone is refused only by a Redis that has one.
	if _, ok := base.User.Password(); ok {
		cases["wrong password"] = wrong(func(u *neturl.URL) { u.User = neturl.UserPassword(u.User.Username(), "not-the-password") })
	}
	for name, url := range cases {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			s, err := redis.Open(context.Background(), url, &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), AllowUnreachable: true, Prefix: newPrefix(t)})
			if err == nil {
				s.Close()
				t.Fatalf("Open with AllowUnreachable succeeded although Redis refused the URL; log: %s", logs.String())
			}
			t.Logf("Open: %v", err)
			if strings.Contains(err.Error(), "not-the-password") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// TestOpenUnreachableWhileLoading: a Redis that answers LOADING (it is
// reading its data after a restart) is one to wait for.
func TestOpenUnreachableWhileLoading(t *testing.T) {
	srv := newSilentServer(t)
	srv.answer("PING", "-LOADING Redis is loading the dataset in memory\r\n")
	url := "redis://" + srv.addr() + "/0"
	if s, err := redis.Open(context.Background(), url, &redis.Options{Logger: quiet}); err == nil {
		s.Close()
		t.Fatal("Open of a loading Redis succeeded without AllowUnreachable")
	}
	s, err := redis.Open(context.Background(), url, &redis.Options{Logger: quiet, AllowUnreachable: true})
	if err != nil {
		t.Fatalf("Open of a loading Redis with AllowUnreachable: %v", err)
	}
	s.Close()
}

// TestOpenFailsOnErrorReply: with AllowUnreachable, an error reply to the
// first PING that is not a passing state fails Open.
func TestOpenFailsOnErrorReply(t *testing.T) {
	srv := newSilentServer(t)
	srv.answer("PING", "-NOAUTH Authentication required.\r\n")
	s, err := redis.Open(context.Background(), "redis://"+srv.addr()+"/0", &redis.Options{Logger: quiet, AllowUnreachable: true})
	if err == nil {
		s.Close()
		t.Fatal("Open with AllowUnreachable succeeded although Redis answered NOAUTH")
	}
	if !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("err = %v, want Redis's NOAUTH reply", err)
	}
}

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
	if _, err := s.Put(ctx, conversation.Conversations, conversation.Record{Key: phone, Data: []byte(`"lost"`)}, 0); err == nil {
		t.Fatal("Put succeeded with Redis down")
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
	v, err := s.Put(ctx, conversation.Conversations, conversation.Record{Key: phone, Data: []byte(`"kept"`)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Get(ctx, conversation.Conversations, phone); err != nil || string(r.Data) != `"kept"` || r.Version != v {
		t.Fatalf("Get = %q v%d, %v; want the record written once Redis was up, v%d", r.Data, r.Version, err, v)
	}
}

// TestCallsFailWithoutRetry: a call to a Redis that takes commands but
// never answers (hung, or its replies lost) fails after one attempt. go-redis
// would otherwise send it again on a new connection, up to three times, each
// after a full read timeout; and a write whose reply was lost may have run,
// so a Put sent again would report a conflict with itself.
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
	if _, err := s.Put(ctx, conversation.Conversations, conversation.Record{Key: "+1", Data: []byte(`1`)}, 0); err == nil {
		t.Fatal("Put to a server that does not answer succeeded")
	}
	if got := srv.calls("EVAL"); got != 1 {
		t.Fatalf("Put sent its script %d times, want once", got)
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

// TestPersistenceWarning: Open warns, through the store's logger, when
// Redis keeps no append-only file, and says nothing when it keeps one or
// does not answer INFO (some managed servers refuse it).
func TestPersistenceWarning(t *testing.T) {
	bulk := func(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }
	tests := []struct {
		name, info string
		warn       bool
	}{
		{"append-only file off", bulk("# Persistence\r\naof_enabled:0\r\n"), true},
		{"append-only file on", bulk("# Persistence\r\naof_enabled:1\r\n"), false},
		{"INFO refused", "-ERR unknown command 'INFO'\r\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSilentServer(t)
			srv.answer("PING", "+PONG\r\n")
			srv.answer("INFO", tt.info)
			var logs bytes.Buffer
			s, err := redis.Open(context.Background(), "redis://"+srv.addr()+"/0", &redis.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			if got := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "appendonly yes"); got != tt.warn {
				t.Fatalf("warned %t, want %t; log: %q", got, tt.warn, logs.String())
			}
		})
	}
}
