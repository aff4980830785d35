package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
	"github.com/mombot/mombot/internal/cli"
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

// TestStoreErrorsNameTheStore replays the first hour's storage errors: a
// store path under a file was reported as the lists' ("lists: open: mkdir
// run.sh: not a directory"), and a folder given as the store failed but
// left data.lock and lists.json.lock behind. The error names the store,
// and a failed open leaves the folder as it was.
func TestStoreErrorsNameTheStore(t *testing.T) {
	a := newAskEnv(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	delete(a.vars, "MOMBOT_STORE")
	for _, tt := range []struct {
		store string
		want  string // the error's start
		usage bool
	}{
		{filepath.Join(dir, "run.sh", "conv.json"), "store " + filepath.Join(dir, "run.sh", "conv.json") + ": ", false},
		{filepath.Join(dir, "data"), "store " + filepath.Join(dir, "data") + ": " + filepath.Join(dir, "data") + " is a folder; name a file in it, like " + filepath.Join(dir, "data", "conversations.json"), true},
		{"file:" + filepath.Join(dir, "data"), "store file:" + filepath.Join(dir, "data") + ": " + filepath.Join(dir, "data") + " is a folder; name a file in it, like file:" + filepath.Join(dir, "data", "conversations.json"), true},
		{"sqlite:" + filepath.Join(dir, "data"), "store sqlite:" + filepath.Join(dir, "data") + ": " + filepath.Join(dir, "data") + " is a folder; name a file in it, like sqlite:" + filepath.Join(dir, "data", "mombot.db"), true},
	} {
		before := storetest.Files(t, dir)
		_, _, err := a.run("ask", "--from", "Erin", "--store", tt.store, "hi")
		var u cli.UsageError
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || errors.As(err, &u) != tt.usage {
			t.Errorf("--store %s: %v\nwant an error starting %q (a usage error: %v)", tt.store, err, tt.want, tt.usage)
		}
		storetest.SameFiles(t, dir, before, "ask --store "+tt.store)
		if fs, _ := os.ReadDir(filepath.Join(dir, "data")); len(fs) != 0 {
			t.Errorf("ask --store %s left %d files in data/", tt.store, len(fs))
		}
	}
	if n := len(a.srv.Requests()); n != 0 {
		t.Errorf("%d requests reached Claude", n)
	}
}
