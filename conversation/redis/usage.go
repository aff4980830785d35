package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.UsageLedger = (*Store)(nil)

// usageFields are the hash fields of one day's counts, after "<day>:", in
// the order of addUsageScript's ARGV[2:].
var usageFields = []string{"messages", "api_calls", "input_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens", "cache_read_tokens", "output_tokens"}

func usageCounts(u conversation.Usage) []int64 {
	return []int64{u.Messages, u.Calls, u.InputTokens, u.CacheWrite5mTokens, u.CacheWrite1hTokens, u.CacheReadTokens, u.OutputTokens}
}

func setUsageCount(u *conversation.Usage, field string, n int64) bool {
	p := map[string]*int64{
		"messages": &u.Messages, "api_calls": &u.Calls, "input_tokens": &u.InputTokens,
		"cache_write_5m_tokens": &u.CacheWrite5mTokens, "cache_write_1h_tokens": &u.CacheWrite1hTokens,
		"cache_read_tokens": &u.CacheReadTokens, "output_tokens": &u.OutputTokens,
	}[field]
	if p == nil {
		return false
	}
	*p = n
	return true
}

// addUsageScript adds one phone's usage on one day.
//
//	KEYS[1] the phone's ledger (hash, no TTL)
//	ARGV[1] the day ("2026-02-24")   ARGV[2..] the counts, in usageFields' order
//
// Redis runs a script alone, so replicas adding at once are all counted.
// Redis does not undo a script that fails half way, so what can fail (a key
// of another type, a field that is not an integer) is checked before the
// first write.
var addUsageScript = goredis.NewScript(`
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then
	return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a usage ledger')
end
local names = {` + luaStrings(usageFields) + `}
for i, name in ipairs(names) do
	local v = redis.call('HGET', KEYS[1], ARGV[1] .. ':' .. name)
	if v and not string.match(v, '^%-?%d+$') then
		return redis.error_reply('ERR ' .. KEYS[1] .. ' field ' .. ARGV[1] .. ':' .. name .. ' is not an integer')
	end
end
for i, name in ipairs(names) do
	local n = tonumber(ARGV[i + 1])
	if n ~= 0 then
		redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':' .. name, ARGV[i + 1])
	end
end
return 1
`)

func luaStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + s + "'"
	}
	return strings.Join(q, ", ")
}

func (s *Store) usageKey(phone string) string { return s.prefix + "usage:" + phone }

// AddUsage implements [conversation.UsageLedger] in one Lua script. The
// ledger of a phone is the hash <prefix>usage:<phone>, with a field
// "<day>:<count>" per day and count; it has no TTL, so it outlives the
// conversation's keys.
func (s *Store) AddUsage(ctx context.Context, phone string, at time.Time, u conversation.Usage) error {
	if skip, err := conversation.CheckAddUsage(phone, u); err != nil || skip {
		if err != nil {
			return fmt.Errorf("redis: add usage: %w", err)
		}
		return nil
	}
	args := []any{conversation.UsageDay(at).Format(conversation.UsageDayLayout)}
	for _, n := range usageCounts(u) {
		args = append(args, n)
	}
	if err := addUsageScript.Run(ctx, s.rdb, []string{s.usageKey(phone)}, args...).Err(); err != nil {
		return fmt.Errorf("redis: add usage: %w", err)
	}
	return nil
}

// UsageSince implements [conversation.UsageLedger]. It walks the ledger
// keys with SCAN and reads them in pipelines of listBatch, so it does not
// block Redis; an addition made while it runs may or may not be in the
// result. Fields that are not a day's count (written by someone else) are
// left out.
func (s *Store) UsageSince(ctx context.Context, since time.Time) ([]conversation.DailyUsage, error) {
	phones, err := s.scanSuffixes(ctx, s.usageKey(""), map[string]bool{}, nil)
	if err != nil {
		return nil, fmt.Errorf("redis: usage: %w", err)
	}
	from := conversation.UsageDay(since)
	out := []conversation.DailyUsage{}
	for chunk := range slices.Chunk(phones, listBatch) {
		cmds := make([]*goredis.MapStringStringCmd, len(chunk))
		_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, phone := range chunk {
				cmds[i] = p.HGetAll(ctx, s.usageKey(phone))
			}
			return nil
		})
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, fmt.Errorf("redis: usage: %w", err)
		}
		for i, phone := range chunk {
			days := map[string]*conversation.Usage{}
			for field, v := range cmds[i].Val() {
				day, name, ok := strings.Cut(field, ":")
				if !ok {
					continue
				}
				d, err := time.Parse(conversation.UsageDayLayout, day)
				if err != nil || (!since.IsZero() && d.Before(from)) {
					continue
				}
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					continue
				}
				u := days[day]
				if u == nil {
					u = &conversation.Usage{}
				}
				if setUsageCount(u, name, n) {
					days[day] = u
				}
			}
			for day, u := range days {
				d, _ := time.Parse(conversation.UsageDayLayout, day)
				out = append(out, conversation.DailyUsage{Phone: phone, Day: d, Usage: *u})
			}
		}
	}
	slices.SortFunc(out, conversation.CompareDailyUsage)
	return out, nil
}
