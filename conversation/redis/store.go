package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
	goredis "github.com/redis/go-redis/v9"
)

// ttlSlack is added to the inactivity timeout to make a conversation's TTL,
// so that a conversation still alive to the memory's "more than the
// timeout" rule is still in Redis when it is read at the boundary.
const ttlSlack = time.Second

// appendScript saves one turn as [conversation.AppendTurn] describes.
//
//	KEYS[1] last activity (string, Unix µs)   KEYS[2] turns (list)
//	ARGV[1] now (Unix µs)   ARGV[2] timeout (ns)   ARGV[3] turn cap (0: none)
//	ARGV[4] TTL (ms)        ARGV[5] the turn's JSON
//
// Microseconds since 1970 and their differences times 1000 stay below 2^53,
// so Lua's doubles compare them exactly. A last activity that is not a
// number, written by someone else, counts as expired, and so does a missing
// one: the turns list is then deleted before the push.
//
// Redis does not undo a script that fails half way, so everything that can
// fail is checked before the first write.
var appendScript = goredis.NewScript(`
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind ~= 'list' and kind ~= 'none' then
	return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' holds a ' .. kind .. ', not a list of turns')
end
local last = redis.call('GET', KEYS[1])
local l = last and tonumber(last)
if not l or (tonumber(ARGV[1]) - l) * 1000 > tonumber(ARGV[2]) then
	-- No conversation, or an expired one. Turns without their last
	-- activity (evicted or deleted by hand) are no conversation either and
	-- must not come back into the new one.
	redis.call('DEL', KEYS[2])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
redis.call('RPUSH', KEYS[2], ARGV[5])
local cap = tonumber(ARGV[3])
if cap > 0 then
	redis.call('LTRIM', KEYS[2], -cap, -1)
end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
`)

// loadScript returns the last activity followed by the turns, or nil when
// there is no conversation. A turns list without its last activity key is
// not a conversation.
var loadScript = goredis.NewScript(`
local last = redis.call('GET', KEYS[1])
if not last then
	return false
end
local out = redis.call('LRANGE', KEYS[2], 0, -1)
table.insert(out, 1, last)
return out
`)

// expireScript deletes the conversation if its last activity is at or
// before ARGV[1] (Unix µs).
var expireScript = goredis.NewScript(`
local last = redis.call('GET', KEYS[1])
if not last then
	return 0
end
local l = tonumber(last)
if l and l > tonumber(ARGV[1]) then
	return 0
end
return redis.call('DEL', KEYS[1], KEYS[2])
`)

// deleteScript deletes the conversation and returns 1, or 0 if there was
// none.
var deleteScript = goredis.NewScript(`
local n = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
return n
`)

// Load implements [conversation.Store]. Turns that do not decode or fail
// [conversation.ValidateTurn], such as ones written by hand or by another
// program, are left out and their number is logged as a warning.
func (s *Store) Load(ctx context.Context, phone string) (conversation.Conversation, error) {
	vals, err := loadScript.Run(ctx, s.rdb, []string{s.lastKey(phone), s.turnsKey(phone)}).StringSlice()
	if errors.Is(err, goredis.Nil) {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", conversation.ErrNotFound)
	}
	if err != nil {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", err)
	}
	last, ok := parseMicros(vals[0])
	if !ok {
		s.log.WarnContext(ctx, "redis: stored last activity is not a number; the conversation counts as expired",
			"phone", maskPhone(phone))
	}
	c := conversation.Conversation{Phone: phone, LastActive: last, Turns: make([]conversation.Turn, 0, len(vals)-1)}
	undecodable := 0
	for _, v := range vals[1:] {
		var t conversation.Turn
		if err := json.Unmarshal([]byte(v), &t); err != nil {
			undecodable++
			continue
		}
		c.Turns = append(c.Turns, t)
	}
	// What is in Redis may have been written by another program or an
	// older version; a history with a broken turn would make every later
	// request fail.
	var invalid int
	c.Turns, invalid = conversation.Repair(c.Turns)
	if dropped := undecodable + invalid; dropped > 0 {
		s.log.WarnContext(ctx, "redis: dropped invalid stored turns",
			"phone", maskPhone(phone), "dropped", dropped, "kept", len(c.Turns))
	}
	return c, nil
}

// Append implements [conversation.Store] in one Lua script, see the package
// doc. The last activity is kept to the microsecond. Both keys' TTL becomes
// lim.Timeout plus a second.
func (s *Store) Append(ctx context.Context, phone string, turn conversation.Turn, now time.Time, lim conversation.Limits) error {
	data, err := turn.MarshalJSON()
	if err != nil {
		return fmt.Errorf("redis: append: %w", err)
	}
	ttl := max(lim.Timeout, 0) + ttlSlack
	err = appendScript.Run(ctx, s.rdb, []string{s.lastKey(phone), s.turnsKey(phone)},
		now.UnixMicro(), lim.Timeout.Nanoseconds(), max(lim.MaxTurns, 0),
		(ttl + time.Millisecond - 1).Milliseconds(), data).Err()
	if err != nil {
		return fmt.Errorf("redis: append: %w", err)
	}
	return nil
}

// Delete implements [conversation.Store].
func (s *Store) Delete(ctx context.Context, phone string) error {
	n, err := deleteScript.Run(ctx, s.rdb, []string{s.lastKey(phone), s.turnsKey(phone)}).Int()
	if err != nil {
		return fmt.Errorf("redis: delete: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("redis: delete: %w", conversation.ErrNotFound)
	}
	return nil
}

// Expire implements [conversation.Store] in one Lua script, so that a turn
// saved by another replica since the caller loaded is kept.
func (s *Store) Expire(ctx context.Context, phone string, cutoff time.Time) error {
	// The stored microseconds are at or before cutoff exactly when they are
	// at or before cutoff rounded down to the microsecond.
	err := expireScript.Run(ctx, s.rdb, []string{s.lastKey(phone), s.turnsKey(phone)}, cutoff.UnixMicro()).Err()
	if err != nil {
		return fmt.Errorf("redis: expire: %w", err)
	}
	return nil
}

// listBatch is how many keys one SCAN step asks for and one pipeline reads.
const listBatch = 1000

// List implements [conversation.Store]. It walks the keys with SCAN, so it
// does not block Redis however many conversations there are; a conversation
// saved or deleted while List runs may or may not be in the result. Turns
// counts the stored turns, including any that Load would drop as invalid.
func (s *Store) List(ctx context.Context) ([]conversation.Summary, error) {
	lastPrefix := s.lastKey("")
	match := globEscape(lastPrefix) + "*"
	seen := map[string]bool{} // SCAN may return a key twice
	var phones []string
	var cursor uint64
	for {
		keys, next, err := s.rdb.Scan(ctx, cursor, match, listBatch).Result()
		if err != nil {
			return nil, fmt.Errorf("redis: list: %w", err)
		}
		for _, k := range keys {
			if p := strings.TrimPrefix(k, lastPrefix); !seen[p] {
				seen[p] = true
				phones = append(phones, p)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	slices.Sort(phones)

	out := make([]conversation.Summary, 0, len(phones))
	for chunk := range slices.Chunk(phones, listBatch) {
		lasts := make([]*goredis.StringCmd, len(chunk))
		counts := make([]*goredis.IntCmd, len(chunk))
		_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, phone := range chunk {
				lasts[i] = p.Get(ctx, s.lastKey(phone))
				counts[i] = p.LLen(ctx, s.turnsKey(phone))
			}
			return nil
		})
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, fmt.Errorf("redis: list: %w", err)
		}
		for i, phone := range chunk {
			v, err := lasts[i].Result()
			if errors.Is(err, goredis.Nil) {
				continue // deleted or expired since the scan
			}
			if err == nil {
				err = counts[i].Err()
			}
			if err != nil {
				return nil, fmt.Errorf("redis: list: %w", err)
			}
			last, _ := parseMicros(v)
			out = append(out, conversation.Summary{Phone: phone, LastActive: last, Turns: int(counts[i].Val())})
		}
	}
	return out, nil
}

// parseMicros reads a stored last activity. A value that is not a number,
// written by someone else, reads as the zero time: long expired, as the
// scripts treat it too.
func parseMicros(s string) (time.Time, bool) {
	us, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(us), true
}

// maskPhone hides a number in the log; it is named so that it can be
// called where "phone" is a conversation key.
var maskPhone = phone.Mask
