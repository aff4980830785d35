package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
)

// historyOf returns phone's messages in the store at url, as History gives them.
func historyOf(t *testing.T, url, phone string) []conversation.Message {
	t.Helper()
	e := &env{getenv: func(string) string { return "" }, log: newLogger(&strings.Builder{}, "")}
	s, err := openStore(context.Background(), url, conversation.DefaultTimeout, e)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, _ := conversation.New(s, nil)
	h, err := mem.History(context.Background(), phone)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// migrateChain copies file -> each store in via -> file again, and checks
// every hop keeps the histories byte for byte and re-running changes nothing.
func migrateChain(t *testing.T, via ...string) {
	dir := t.TempDir()
	src := "file:" + filepath.Join(dir, "a.json")
	now := time.Now()
	seed(t, strings.TrimPrefix(src, "file:"), now, "+14155551234",
		storetest.ToolTurn("find chicken", "toolu_1", "1. lemon", "1. Lemon chicken"),
		storetest.TextTurn("number 1?", "30 minutes"))
	seed(t, strings.TrimPrefix(src, "file:"), now, "+14155555678", storetest.TextTurn("hi", "hello"))
	seed(t, strings.TrimPrefix(src, "file:"), now.Add(-2*time.Hour), "+19990000000", storetest.TextTurn("old", "gone"))
	want := map[string][]conversation.Message{
		"+14155551234": historyOf(t, src, "+14155551234"),
		"+14155555678": historyOf(t, src, "+14155555678"),
	}
	chain := append([]string{src}, via...)
	chain = append(chain, "file:"+filepath.Join(dir, "back.json"))
	for i := 1; i < len(chain); i++ {
		for range 2 { // safe to re-run
			out, errOut, code := runCmd(t, nil, "history", "migrate", "--from", chain[i-1], "--to", chain[i])
			if code != 0 || !strings.Contains(out, "copied 2 conversations") {
				t.Fatalf("migrate %s -> %s: exit %d\n%s%s", chain[i-1], chain[i], code, out, errOut)
			}
			if !strings.Contains(errOut, "100%") {
				t.Errorf("no progress bar: %q", errOut)
			}
		}
		for phone, msgs := range want {
			got := historyOf(t, chain[i], phone)
			if len(got) != len(msgs) {
				t.Fatalf("%s: %s has %d messages, want %d", chain[i], phone, len(got), len(msgs))
			}
			for j := range got {
				if !got[j].Equal(msgs[j]) {
					t.Fatalf("%s: %s message %d changed:\n%s\n%s", chain[i], phone, j, got[j].Content, msgs[j].Content)
				}
			}
		}
		if h := historyOf(t, chain[i], "+19990000000"); len(h) != 0 {
			t.Fatalf("%s: an expired conversation was copied", chain[i])
		}
	}
}

func TestMigrateFileSQLiteFile(t *testing.T) {
	migrateChain(t, "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
}

// TestMigrateRoundTrip is the round trip: file -> sqlite -> redis -> file.
func TestMigrateRoundTrip(t *testing.T) {
	url := os.Getenv("MOMBOT_TEST_REDIS_URL")
	if url == "" {
		t.Skip("set MOMBOT_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/0) to run the Redis leg of the migration")
	}
	prefix := fmt.Sprintf("mombottest:migrate:%d:", time.Now().UnixNano())
	redisURL := url + "?prefix=" + prefix
	t.Cleanup(func() { cleanRedis(t, redisURL) })
	migrateChain(t, "sqlite:"+filepath.Join(t.TempDir(), "m.db"), redisURL)
}

// cleanRedis deletes every conversation in the Redis store at url.
func cleanRedis(t *testing.T, url string) {
	e := &env{getenv: func(string) string { return "" }, log: newLogger(&strings.Builder{}, "")}
	s, err := openStore(context.Background(), url, conversation.DefaultTimeout, e)
	if err != nil {
		t.Log(err)
		return
	}
	defer s.Close()
	sums, _ := s.List(context.Background())
	for _, sum := range sums {
		s.Delete(context.Background(), sum.Phone)
	}
}

func TestMigrateBadInput(t *testing.T) {
	if _, errOut, code := runCmd(t, nil, "history", "migrate", "--from", "a.json"); code != 2 || !strings.Contains(errOut, "--to") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	if _, errOut, code := runCmd(t, nil, "history", "migrate", "--from", "a.json", "--to", "a.json"); code != 2 || !strings.Contains(errOut, "same store") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
}
