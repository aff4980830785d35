package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storetest"
)

func TestParseStoreURL(t *testing.T) {
	tests := []struct {
		url  string
		want storeSpec
		err  string // part of the error, "" for none
	}{
		{"", storeSpec{kind: "file", path: jsonfile.DefaultPath()}, ""},
		{"file:", storeSpec{kind: "file", path: jsonfile.DefaultPath()}, ""},
		{"data/c.json", storeSpec{kind: "file", path: "data/c.json"}, ""},
		{"/srv/c.json", storeSpec{kind: "file", path: "/srv/c.json"}, ""},
		{"./a:b.json", storeSpec{kind: "file", path: "./a:b.json"}, ""},
		{`C:\data\c.json`, storeSpec{kind: "file", path: `C:\data\c.json`}, ""},
		{"file:data/c.json", storeSpec{kind: "file", path: "data/c.json"}, ""},
		{"file:///srv/c.json", storeSpec{kind: "file", path: "/srv/c.json"}, ""},
		{"sqlite:data/m.db", storeSpec{kind: "sqlite", path: "data/m.db"}, ""},
		{"sqlite:/srv/m.db", storeSpec{kind: "sqlite", path: "/srv/m.db"}, ""},
		{"redis://127.0.0.1:6379/0", storeSpec{kind: "redis", redisURL: "redis://127.0.0.1:6379/0"}, ""},
		{"redis://:pw@cache:6380/2", storeSpec{kind: "redis", redisURL: "redis://:pw@cache:6380/2"}, ""},
		{"rediss://cache:6380/1", storeSpec{kind: "redis", redisURL: "rediss://cache:6380/1"}, ""},
		{"redis://h:1/0?prefix=team:", storeSpec{kind: "redis", redisURL: "redis://h:1/0", prefix: "team:"}, ""},
		{"redis://h:1/0?read_timeout=2s&prefix=p:", storeSpec{kind: "redis", redisURL: "redis://h:1/0?read_timeout=2s", prefix: "p:"}, ""},
		{"sqlite:", storeSpec{}, "needs a path"},
		{"ftp://host/c.json", storeSpec{}, "unknown kind"},
		{"postgres:x", storeSpec{}, "unknown kind"},
		{"redis://[::1", storeSpec{}, "not a redis://"},
		{"redis:cache:6379", storeSpec{}, "not a redis://"},
		{"redis://:s3cret@[::1", storeSpec{}, "not a redis://"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := parseStoreURL(tt.url)
			if tt.err != "" {
				var ue usageError
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &ue) {
					t.Fatalf("err = %v, want a usage error with %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("the error repeats the password: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("= %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestSameStore(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	tests := []struct {
		a, b string
		same bool
	}{
		{a, "file:" + a, true},
		{a, filepath.Join(dir, "x", "..", "a.json"), true},
		{a, "sqlite:" + a, true},
		{a, filepath.Join(dir, "b.json"), false},
		{"redis://localhost/0", "redis://127.0.0.1:6379/0", true},
		{"redis://LOCALHOST:6379", "redis://[::1]:6379/0", true},
		{"redis://h/0", "rediss://:pw@h:6379/0?prefix=mombot:", true},
		{"redis://h/0", "redis://h/1", false},
		{"redis://h/0", "redis://h:6380/0", false},
		{"redis://h/0", "redis://h/0?prefix=other:", false},
		{"redis://h/0", "redis://g/0", false},
		{a, "redis://h/0", false},
	}
	for _, tt := range tests {
		got, err := sameStore(tt.a, tt.b)
		if err != nil || got != tt.same {
			t.Errorf("sameStore(%q, %q) = %v, %v; want %v", tt.a, tt.b, got, err, tt.same)
		}
	}
}

// TestOpenWhileRedisDown: the memory of a command that may start without
// Redis (serve) opens while Redis is down, and works once Redis is up; the
// other commands fail at once.
func TestOpenWhileRedisDown(t *testing.T) {
	r := startRedis(t)
	r.kill()
	var logs strings.Builder
	e := &env{getenv: func(string) string { return "" }, log: newLogger(&logs, "")}
	ctx := context.Background()
	cfg := memoryConfig{store: r.url() + "?prefix=mombot-down:", timeout: time.Hour, maxTurns: 10}
	if _, _, err := cfg.open(ctx, e); err == nil {
		t.Fatal("open succeeded with Redis down, without startWithoutRedis")
	}
	cfg.startWithoutRedis = true
	mem, store, err := cfg.open(ctx, e)
	if err != nil {
		t.Fatalf("open with startWithoutRedis: %v", err)
	}
	defer store.Close()
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("no warning that Redis is down:\n%s", logs.String())
	}
	const phone = "+14155551234"
	if _, err := mem.History(ctx, phone); err == nil {
		t.Fatal("History succeeded with Redis down")
	}

	r.start()
	turn := storetest.TextTurn("hi", "hello")
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := mem.SaveTurn(ctx, phone, turn)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SaveTurn still fails with Redis up: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h, err := mem.History(ctx, phone)
	if err != nil || len(h) != 2 || !h[0].Equal(turn[0]) {
		t.Fatalf("History = %d messages, %v; want the saved turn", len(h), err)
	}
	if err := mem.Clear(ctx, phone); err != nil && !errors.Is(err, conversation.ErrNotFound) {
		t.Fatal(err)
	}
}
