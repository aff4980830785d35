package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
)

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
