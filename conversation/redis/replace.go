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
//	KEYS[1] last activity   KEYS[2] turns
//	ARGV[1] last activity (Unix µs)   ARGV[2] TTL (ms)   ARGV[3...] the turns' JSON
//
// A stored last activity that is not a number counts as older. As in
// appendScript, what can fail is checked before the first write.
var replaceScript = goredis.NewScript(`
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind ~= 'list' and kind ~= 'none' then
	return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' holds a ' .. kind .. ', not a list of turns')
end
local last = tonumber(redis.call('GET', KEYS[1]) or '')
if last and last > tonumber(ARGV[1]) then
	return 0
end
redis.call('DEL', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
for i = 3, #ARGV do
	redis.call('RPUSH', KEYS[2], ARGV[i])
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`)

// Replace implements [conversation.Replacer] in one Lua script. The last
// activity is kept to the microsecond; both keys' TTL becomes timeout plus a
// second, from now, as after a save.
func (s *Store) Replace(ctx context.Context, c conversation.Conversation, timeout time.Duration) (bool, error) {
	ttl := max(timeout, 0) + ttlSlack
	args := make([]any, 0, 2+len(c.Turns))
	args = append(args, c.LastActive.UnixMicro(), (ttl + time.Millisecond - 1).Milliseconds())
	// Turns that all pass conversation.Repair as they are are stored as
	// validated, so that loads need not validate them again; otherwise
	// every load validates them.
	_, dropped := conversation.Repair(c.Turns)
	for _, t := range c.Turns {
		data, _, err := encodeTurn(t, dropped == 0)
		if err != nil {
			return false, fmt.Errorf("redis: replace: %w", err)
		}
		args = append(args, data)
	}
	n, err := replaceScript.Run(ctx, s.rdb, []string{s.lastKey(c.Phone), s.turnsKey(c.Phone)}, args...).Int()
	if err != nil {
		return false, fmt.Errorf("redis: replace: %w", err)
	}
	return n == 1, nil
}
