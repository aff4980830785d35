package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.Replacer = (*Store)(nil)

// replaceScript makes the conversation exactly the given turns, unless the
// stored last activity is newer; it returns 1 if it replaced, 0 if not.
//
//	KEYS[1] last activity   KEYS[2] turns   KEYS[3] the turns' tool ids
//	ARGV[1] last activity (Unix µs)   ARGV[2] TTL (ms)   ARGV[3] n, the number of turns
//	ARGV[4 ... 3+n] the turns' elements   ARGV[4+n ... 3+2n] their ids entries
//
// A stored last activity that is not a number counts as older. As in
// appendScript, what can fail is checked before the first write.
var replaceScript = goredis.NewScript(`
for i = 2, 3 do
	local kind = redis.call('TYPE', KEYS[i])['ok']
	if kind ~= 'list' and kind ~= 'none' then
		return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a list')
	end
end
local last = tonumber(redis.call('GET', KEYS[1]) or '')
if last and last > tonumber(ARGV[1]) then
	return 0
end
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local n = tonumber(ARGV[3])
for i = 4, 3 + n do
	redis.call('RPUSH', KEYS[2], ARGV[i])
	redis.call('RPUSH', KEYS[3], ARGV[i + n])
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return 1
`)

// Replace implements [conversation.Replacer] in one Lua script. The last
// activity is kept to the microsecond; the keys' TTL becomes timeout plus a
// second, from now, as after a save.
func (s *Store) Replace(ctx context.Context, c conversation.Conversation, timeout time.Duration) (bool, error) {
	ttl := max(timeout, 0) + ttlSlack
	args := make([]any, 0, 3+2*len(c.Turns))
	args = append(args, c.LastActive.UnixMicro(), (ttl + time.Millisecond - 1).Milliseconds(), len(c.Turns))
	entries := make([]any, 0, len(c.Turns))
	// Turns that all pass conversation.Repair as they are are stored as
	// validated, so that loads need not validate them again; otherwise
	// every load validates them.
	_, dropped := conversation.Repair(c.Turns)
	for _, t := range c.Turns {
		data, entry, _, err := encodeTurn(t, dropped == 0)
		if err != nil {
			return false, fmt.Errorf("redis: replace: %w", err)
		}
		args = append(args, data)
		entries = append(entries, entry)
	}
	args = append(args, entries...)
	n, err := replaceScript.Run(ctx, s.rdb, s.keys(c.Phone), args...).Int()
	if err != nil {
		return false, fmt.Errorf("redis: replace: %w", err)
	}
	return n == 1, nil
}
