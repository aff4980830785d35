package redis

import (
	"context"
	"encoding/hex"
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
//	KEYS[3] the turns' tool ids (list, see idsEntry)
//	ARGV[1] now (Unix µs)   ARGV[2] timeout (ns)   ARGV[3] turn cap (0: none)
//	ARGV[4] TTL (ms)        ARGV[5] the turn's element
//	ARGV[6] the turn's ids entry   ARGV[7...] the turn's tool_use ids, hex
//
// Microseconds since 1970 and their differences times 1000 stay below 2^53,
// so Lua's doubles compare them exactly. A last activity that is not a
// number, written by someone else, counts as expired, and so does a missing
// one: the turns list is then deleted before the push.
//
// In a conversation that goes on, the turn's tool_use ids must not be those
// of a turn that stays next to it ([conversation.KeptTurns]). They are read
// from the ids list, without moving the turns through Lua, when it is in
// step with the turns: as long, and its last entry carries the checksum in
// the last turn's header. Otherwise (turns pushed, trimmed or replaced by an
// older version, or none of them ours) the list is built again from the
// turns: their headers, or their JSON for turns without one. The script
// then returns the id in use, hex, and changes nothing; otherwise 1.
//
// Redis does not undo a script that fails half way, so everything that can
// fail is checked before the first write.
var appendScript = goredis.NewScript(`
local last = redis.call('GET', KEYS[1])
local l = last and tonumber(last)
local cap = tonumber(ARGV[3])
local rebuilt
if not l or (tonumber(ARGV[1]) - l) * 1000 > tonumber(ARGV[2]) then
	-- No conversation, or an expired one. Turns without their last
	-- activity (evicted or deleted by hand) are no conversation either and
	-- must not come back into the new one. Keys of another type are not
	-- ours to delete.
	for i = 2, 3 do
		local kind = redis.call('TYPE', KEYS[i])['ok']
		if kind ~= 'list' and kind ~= 'none' then
			return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a list')
		end
	end
	redis.call('DEL', KEYS[2], KEYS[3])
else
	-- LLEN and LRANGE fail on a key of another type, before any write.
	local n = redis.call('LLEN', KEYS[2])
	local entries = redis.call('LRANGE', KEYS[3], 0, -1)
	local synced = n == #entries
	if synced and n > 0 then
		local sum = string.match(redis.call('LINDEX', KEYS[2], -1), '^{"_mombot":"1 (%x+)')
		synced = sum ~= nil and sum == string.match(entries[n], '^(%x+)')
	end
	if not synced then
		rebuilt = {}
		for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
			local sum, ids = string.match(e, '^{"_mombot":"1 (%x+)([%x ]*)",')
			if not sum then
				sum, ids = '-', ''
				local ok, t = pcall(cjson.decode, e)
				if ok and type(t) == 'table' and type(t.messages) == 'table' then
					for _, m in ipairs(t.messages) do
						if type(m) == 'table' and m.role == 'assistant' and type(m.content) == 'table' then
							for _, b in ipairs(m.content) do
								if type(b) == 'table' and b.type == 'tool_use' and type(b.id) == 'string' then
									ids = ids .. ' ' .. string.gsub(b.id, '.', function(c) return string.format('%02x', string.byte(c)) end)
								end
							end
						end
					end
				end
			end
			table.insert(rebuilt, sum .. ids)
		end
		entries = rebuilt
	end
	if #ARGV >= 7 and cap ~= 1 and #entries > 0 then
		local from = 1
		if cap > 1 then
			from = math.max(1, #entries - cap + 2)
		end
		-- The kept entries on lines of their own: an id is then a
		-- space, its hex, and a space or a newline; a checksum starts
		-- a line. Plain finds in one string make no garbage per id,
		-- where splitting every entry into a table of ids cost Redis
		-- more than the rest of the script.
		local kept = '\n' .. table.concat(entries, '\n', from, #entries) .. '\n'
		for i = 7, #ARGV do
			if string.find(kept, ' ' .. ARGV[i] .. ' ', 1, true) or string.find(kept, ' ' .. ARGV[i] .. '\n', 1, true) then
				return ARGV[i]
			end
		end
	end
end
if rebuilt then
	redis.call('DEL', KEYS[3])
	if #rebuilt > 0 then
		redis.call('RPUSH', KEYS[3], unpack(rebuilt))
	end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
redis.call('RPUSH', KEYS[2], ARGV[5])
local len = redis.call('RPUSH', KEYS[3], ARGV[6])
if cap > 0 and len > cap then
	redis.call('LTRIM', KEYS[2], -cap, -1)
	redis.call('LTRIM', KEYS[3], -cap, -1)
end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 1
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
redis.call('DEL', KEYS[3])
return redis.call('DEL', KEYS[1], KEYS[2])
`)

// deleteScript deletes the conversation and returns 1, or 0 if there was
// none.
var deleteScript = goredis.NewScript(`
local n = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3])
return n
`)

// Load implements [conversation.Store]. A turn whose checksum matches was
// validated when it was saved and is split into messages without decoding
// again. If any other is found (written by an older version, by hand or by
// another program), every turn is passed through [conversation.Repair]:
// those that do not decode or fail [conversation.ValidateTurn] are left out
// and their number is logged as a warning.
func (s *Store) Load(ctx context.Context, phone string) (conversation.Conversation, error) {
	// One MULTI/EXEC, so both keys are read at one instant, in one round
	// trip. (A Lua script did the same, but moving 30 kB of turns through
	// Lua cost Redis about 70 µs; the plain commands cost a few.) Turns
	// without their last activity key are no conversation.
	var lastCmd *goredis.StringCmd
	var turnsCmd *goredis.StringSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		lastCmd = p.Get(ctx, s.lastKey(phone))
		turnsCmd = p.LRange(ctx, s.turnsKey(phone), 0, -1)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", err)
	}
	lastVal, err := lastCmd.Result()
	if errors.Is(err, goredis.Nil) {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", conversation.ErrNotFound)
	}
	if err != nil {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", err)
	}
	elems, err := turnsCmd.Result()
	if err != nil {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", err)
	}
	last, ok := parseMicros(lastVal)
	if !ok {
		s.log.WarnContext(ctx, "redis: stored last activity is not a number; the conversation counts as expired",
			"phone", maskPhone(phone))
	}
	c := conversation.Conversation{Phone: phone, LastActive: last, Turns: make([]conversation.Turn, 0, len(elems))}
	undecodable, foreign := 0, false
	for _, v := range elems {
		t, trusted, err := decodeTurn([]byte(v))
		if err != nil {
			undecodable++
			continue
		}
		foreign = foreign || !trusted
		c.Turns = append(c.Turns, t)
	}
	if !foreign && undecodable == 0 {
		return c, nil
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
	data, entry, ids, err := encodeTurn(turn, true)
	if err != nil {
		return fmt.Errorf("redis: append: %w", err)
	}
	ttl := max(lim.Timeout, 0) + ttlSlack
	args := make([]any, 0, 6+len(ids))
	args = append(args, now.UnixMicro(), lim.Timeout.Nanoseconds(), max(lim.MaxTurns, 0),
		(ttl + time.Millisecond - 1).Milliseconds(), data, entry)
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := appendScript.Run(ctx, s.rdb, s.keys(phone), args...).Result()
	if err != nil {
		return fmt.Errorf("redis: append: %w", err)
	}
	if inUse, ok := res.(string); ok {
		id, _ := hex.DecodeString(inUse)
		return fmt.Errorf("redis: append: %w", conversation.CheckToolIDs([]string{string(id)}, []string{string(id)}))
	}
	return nil
}

// Delete implements [conversation.Store].
func (s *Store) Delete(ctx context.Context, phone string) error {
	n, err := deleteScript.Run(ctx, s.rdb, s.keys(phone)).Int()
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
	err := expireScript.Run(ctx, s.rdb, s.keys(phone), cutoff.UnixMicro()).Err()
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
