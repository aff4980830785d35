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
//	KEYS as appendScript's: the list, then the older layout's three keys
//	ARGV[1] last activity (Unix µs)   ARGV[2] TTL (ms)
//	ARGV[3] the head   ARGV[4...] the turns' elements
//
// A stored last activity that is not a number counts as older. As in
// appendScript, what can fail is read before the first write. The keys of
// the older layout are deleted, so that the conversation is only the new
// one.
var replaceScript = goredis.NewScript(luaLines + `
local head = redis.call('LINDEX', KEYS[1], 0)
local last
if head then
	last = lastOf(head)
else
	last = tonumber(redis.call('GET', KEYS[2]) or '')
end
if last and last > tonumber(ARGV[1]) then
	return 0
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
for i = 3, #ARGV, 1000 do
	redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// Replace implements [conversation.Replacer] in one Lua script. The last
// activity is kept to the microsecond; the conversation's TTL becomes
// timeout plus a second, from now, as after a save.
func (s *Store) Replace(ctx context.Context, c conversation.Conversation, timeout time.Duration) (bool, error) {
	ttl := max(timeout, 0) + ttlSlack
	// Turns that all pass conversation.Repair as they are are stored as
	// validated, so that loads need not validate them again; otherwise
	// every load validates them.
	_, dropped := conversation.Repair(c.Turns)
	elems := make([]any, 0, len(c.Turns))
	lines := make([]string, 0, len(c.Turns))
	for _, t := range c.Turns {
		elem, line, _, err := encodeTurn(t, dropped == 0)
		if err != nil {
			return false, fmt.Errorf("redis: replace: %w", err)
		}
		elems = append(elems, elem)
		lines = append(lines, line)
	}
	micros := c.LastActive.UnixMicro()
	args := make([]any, 0, 3+len(elems))
	args = append(args, micros, (ttl + time.Millisecond - 1).Milliseconds(), appendHead(nil, micros, lines))
	args = append(args, elems...)
	n, err := replaceScript.Run(ctx, s.rdb, s.keys(c.Phone), args...).Int()
	if err != nil {
		return false, fmt.Errorf("redis: replace: %w", err)
	}
	return n == 1, nil
}
