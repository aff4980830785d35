package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
)

// The ledger's key has no TTL, so it outlives the conversation's keys, and
// an addition that Redis refuses (a key of another type, a count that is
// not an integer, set by someone else) changes nothing.
func TestUsageKeys(t *testing.T) {
	url := testURL(t)
	prefix := newPrefix(t)
	ctx := context.Background()
	s, err := redis.Open(ctx, url, &redis.Options{Prefix: prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rdb := rawClient(t)
	at := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	u := conversation.Usage{Messages: 1, Calls: 2, InputTokens: 3, CacheWrite5mTokens: 4, CacheWrite1hTokens: 5, CacheReadTokens: 6, OutputTokens: 7}

	if err := s.AddUsage(ctx, "+1", at, u); err != nil {
		t.Fatal(err)
	}
	key := prefix + "usage:+1"
	if ttl := rdb.TTL(ctx, key).Val(); ttl != -1 {
		t.Errorf("TTL of %s = %v, want none", key, ttl)
	}
	if got := rdb.HGet(ctx, key, "2026-02-24:cache_write_1h_tokens").Val(); got != "5" {
		t.Errorf("field 2026-02-24:cache_write_1h_tokens = %q, want 5", got)
	}

	rdb.HSet(ctx, key, "2026-02-24:output_tokens", "many")
	if err := s.AddUsage(ctx, "+1", at, u); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Errorf("AddUsage over a field that is not an integer: err = %v", err)
	}
	if got := rdb.HGet(ctx, key, "2026-02-24:messages").Val(); got != "1" {
		t.Errorf("a refused addition changed messages to %q", got)
	}

	rdb.Set(ctx, prefix+"usage:+2", "x", 0)
	if err := s.AddUsage(ctx, "+2", at, u); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("AddUsage over a string key: err = %v, want WRONGTYPE", err)
	}
}
