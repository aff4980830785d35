package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.RecentMessages = (*Store)(nil)

// A phone's recent messages ([conversation.RecentMessages]) are a pair of
// keys apart from its conversation:
//
//	<prefix>recent:<phone>     hash: message id -> {"role","text","at"} (at in Unix µs)
//	<prefix>recentat:<phone>   sorted set: message id, scored by its time (Unix µs)
//
// Both carry the TTL of the window plus a minute, renewed by every
// addition, so that a person who stops writing leaves nothing behind;
// within the window the sorted set orders the pruning.
func (s *Store) recentKey(phone string) string   { return s.prefix + "recent:" + phone }
func (s *Store) recentAtKey(phone string) string { return s.prefix + "recentat:" + phone }

// recentTTL is the lifetime of a phone's keys after its last addition.
const recentTTL = conversation.RecentWindow + time.Minute

// rememberScript adds messages and prunes, in one script.
//
//	KEYS[1] the hash   KEYS[2] the sorted set
//	ARGV[1] the oldest time kept (Unix µs)   ARGV[2] the cap   ARGV[3] TTL (ms)
//	ARGV[4...] per message: id, JSON, time (Unix µs)
//
// The types of both keys are checked before the first write, since Redis
// does not undo a script that fails half way.
var rememberScript = goredis.NewScript(`
for i = 1, 2 do
	local kind = redis.call('TYPE', KEYS[i])['ok']
	local want = (i == 1) and 'hash' or 'zset'
	if kind ~= want and kind ~= 'none' then
		return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a ' .. want)
	end
end
for i = 4, #ARGV, 3 do
	redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
	redis.call('ZADD', KEYS[2], ARGV[i + 2], ARGV[i])
end
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1])
local n = redis.call('ZCARD', KEYS[2]) - #gone
local cap = tonumber(ARGV[2])
if n > cap then
	local extra = redis.call('ZRANGE', KEYS[2], #gone, #gone + n - cap - 1)
	for _, id in ipairs(extra) do gone[#gone + 1] = id end
end
for i = 1, #gone, 500 do
	local batch = {}
	for j = i, math.min(i + 499, #gone) do batch[#batch + 1] = gone[j] end
	redis.call('HDEL', KEYS[1], unpack(batch))
	redis.call('ZREM', KEYS[2], unpack(batch))
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
`)

// recentValue is a message's value in the hash.
type recentValue struct {
	Role string `json:"role"`
	Text string `json:"text"`
	At   int64  `json:"at"`
}

// RememberMessages implements [conversation.RecentMessages] in one script.
func (s *Store) RememberMessages(ctx context.Context, phone string, now time.Time, msgs ...conversation.RecentMessage) error {
	add, skip, err := conversation.CheckRemember(phone, now, msgs)
	if err != nil {
		return fmt.Errorf("redis: remember messages: %w", err)
	}
	if skip {
		return nil
	}
	args := make([]any, 0, 3+3*len(add))
	args = append(args, now.Add(-conversation.RecentWindow).UnixMicro(), conversation.MaxRecentPerPhone, recentTTL.Milliseconds())
	for _, m := range add {
		v, err := json.Marshal(recentValue{Role: m.Role, Text: m.Text, At: m.At.UnixMicro()})
		if err != nil {
			return fmt.Errorf("redis: remember messages: %w", err)
		}
		args = append(args, m.ID, v, m.At.UnixMicro())
	}
	keys := []string{s.recentKey(phone), s.recentAtKey(phone)}
	if err := rememberScript.Run(ctx, s.rdb, keys, args...).Err(); err != nil {
		return fmt.Errorf("redis: remember messages: %w", err)
	}
	return nil
}

// RecallMessage implements [conversation.RecentMessages].
func (s *Store) RecallMessage(ctx context.Context, phone, id string, now time.Time) (conversation.RecentMessage, error) {
	raw, err := s.rdb.HGet(ctx, s.recentKey(phone), id).Result()
	if errors.Is(err, goredis.Nil) {
		return conversation.RecentMessage{}, fmt.Errorf("redis: recall message: %w", conversation.ErrNotFound)
	}
	if err != nil {
		return conversation.RecentMessage{}, fmt.Errorf("redis: recall message: %w", err)
	}
	var v recentValue
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return conversation.RecentMessage{}, fmt.Errorf("redis: recall message: the value of %s is not a recent message: %w", strconv.Quote(id), err)
	}
	m := conversation.RecentMessage{ID: id, Role: v.Role, Text: conversation.ClipRecentText(v.Text), At: time.UnixMicro(v.At)}
	if err := conversation.CheckRecent(m); err != nil {
		return conversation.RecentMessage{}, fmt.Errorf("redis: recall message: %w", err)
	}
	if conversation.RecentExpired(m.At, now) {
		return conversation.RecentMessage{}, fmt.Errorf("redis: recall message: %w", conversation.ErrNotFound)
	}
	return m, nil
}

// ForgetMessages implements [conversation.RecentMessages].
func (s *Store) ForgetMessages(ctx context.Context, phone string) error {
	if err := s.rdb.Del(ctx, s.recentKey(phone), s.recentAtKey(phone)).Err(); err != nil {
		return fmt.Errorf("redis: forget messages: %w", err)
	}
	return nil
}
