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
//	KEYS as appendScript's: the hash, the list, the oldest layout's keys
//	ARGV[1] last activity (Unix µs)   ARGV[2] TTL (ms)
//	ARGV[3...] the head's field and value, then each turn's
//
// A stored last activity that is not a number counts as older. As in
// appendScript, what can fail is read before the first write. Every
// layout's keys are deleted, so that the conversation is only the new one.
var replaceScript = goredis.NewScript(storedLast + `
if last and last > tonumber(ARGV[1]) then
	return 0
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
for i = 3, #ARGV, 1000 do
	redis.call('HSET', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
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
	fields := make([]string, len(c.Turns))
	lines := make([]string, len(c.Turns))
	args := make([]any, 4, 4+2*len(c.Turns))
	for i, t := range c.Turns {
		elem, line, _, err := encodeTurn(t, dropped == 0)
		if err != nil {
			return false, fmt.Errorf("redis: replace: %w", err)
		}
		fields[i], lines[i] = newField(), line
		args = append(args, fields[i], elem)
	}
	micros := c.LastActive.UnixMicro()
	args[0], args[1] = micros, (ttl + time.Millisecond - 1).Milliseconds()
	args[2], args[3] = headField, appendHead(nil, micros, fields, lines)
	n, err := replaceScript.Run(ctx, s.rdb, s.keys(c.Phone), args...).Int()
	if err != nil {
		return false, fmt.Errorf("redis: replace: %w", err)
	}
	return n == 1, nil
}
