package redis_test

import (
	"bytes"
	"context"
	"log/slog"
	neturl "net/url"
	"strings"
	"testing"

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
