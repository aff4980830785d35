package redis

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/redisglob"
	"github.com/mombot/mombot/phone"
	goredis "github.com/redis/go-redis/v9"
)

// ttlSlack is added to the inactivity timeout to make a conversation's TTL,
// so that a conversation still alive to the memory's "more than the
// timeout" rule is still in Redis when it is read at the boundary.
const ttlSlack = time.Second

// luaLines is Lua shared by the scripts that read a conversation's list
// (see turns.go). lastOf returns the last activity in a head, or nil for a
// head this version does not read. lineOf returns the head line of an
// element that has none (moved over from the older layout, or out of step
// after a change by hand): "-", since Lua has no CRC-32C, and the tool_use
// ids, from the older layout's header member or else from the JSON.
const luaLines = `
local function lastOf(head)
	return tonumber(string.match(head, '^2 (%-?%d+)\n'))
end
local function hexOf(s)
	return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
end
local function lineOf(e)
	local ids = string.match(e, '^{"_mombot":"1 %x+([%x ]*)",')
	if ids then
		return '-' .. ids
	end
	ids = ''
	local ok, t = pcall(cjson.decode, e)
	if ok and type(t) == 'table' and type(t.messages) == 'table' then
		for _, m in ipairs(t.messages) do
			if type(m) == 'table' and m.role == 'assistant' and type(m.content) == 'table' then
				for _, b in ipairs(m.content) do
					if type(b) == 'table' and b.type == 'tool_use' and type(b.id) == 'string' then
						ids = ids .. ' ' .. hexOf(b.id)
					end
				end
			end
		end
	end
	return '-' .. ids
end
`

// appendScript is the first half of a save (see Store.Append): it makes
// the conversation's list ready for the turn that the same transaction
// pushes after it, as [conversation.AppendTurn] describes.
//
//	KEYS[1] the conversation (list: head, turns)
//	KEYS[2], KEYS[3], KEYS[4] the older layout's last activity, turns and
//	        ids (legacy.go), moved into KEYS[1] by the first save
//	ARGV[1] now (Unix µs)   ARGV[2] timeout (ns)   ARGV[3] turn cap (0: none)
//	ARGV[4] TTL (ms)   ARGV[5] the turn's head line
//	ARGV[6...] the turn's tool_use ids, hex
//
// It writes the new head (the last activity, the kept turns' lines and the
// new turn's), drops the turns that the cap drops and any element after
// the head's turns (the turn of a save that was refused or whose script
// did not run: such elements are no part of the conversation, see
// Store.Load), and renews the TTL. In a conversation that goes on that is
// five calls: read the head and the list's length, write the head (over
// the oldest turn when the cap drops it, then trimmed off), renew the
// TTL. Neither the turns nor the new turn move through Lua; only the head
// does, well under a kilobyte.
//
// Microseconds since 1970 and their differences times 1000 stay below 2^53,
// so Lua's doubles compare them exactly. A missing head, or one this
// version does not read, is no conversation, and an expired one is over:
// the list then starts anew, with the turns that stay of a conversation
// in the older layout if there is one.
//
// In a conversation that goes on, the turn's tool_use ids must not be those
// of a turn that stays next to it ([conversation.KeptTurns]); they are
// found in the kept turns' head lines, each id behind a space. The script
// then returns the id in use, hex, and changes nothing; otherwise 1.
//
// Redis does not undo a script that fails half way, so everything that can
// fail (a key of another type) is read before the first write.
var appendScript = goredis.NewScript(luaLines + `
local now, cap = tonumber(ARGV[1]), tonumber(ARGV[3])
-- The kept turns' head lines are body from keep on, each line ending in a
-- newline: found by position, without copying them out of the head.
local body, keep = '', 1
local drop = 0    -- turns that the cap drops
local n, len      -- the turns in the head, the list's length
local moved       -- elements moved over from the older layout
local oldLast     -- the older layout's last activity
local head = redis.call('LINDEX', KEYS[1], 0)
local last = head and lastOf(head)
if last and (now - last) * 1000 <= tonumber(ARGV[2]) then
	body = head
	keep = string.find(head, '\n', 1, true) + 1
	local pos = keep
	n = 0
	while true do
		local nl = string.find(head, '\n', pos, true)
		if not nl then break end
		n, pos = n + 1, nl + 1
	end
	len = redis.call('LLEN', KEYS[1])
	if pos <= #head or len < n + 1 then
		-- Fewer turns than lines (changed by hand): the turns are
		-- the conversation, their lines built again.
		local t = {}
		for i, e in ipairs(redis.call('LRANGE', KEYS[1], 1, -1)) do
			t[i] = lineOf(e) .. '\n'
		end
		body, keep, n = table.concat(t), 1, #t
	end
	if cap > 0 and n >= cap then
		drop = n - cap + 1
	end
	for _ = 1, drop do
		keep = string.find(body, '\n', keep, true) + 1
	end
elseif not last then
	oldLast = redis.call('GET', KEYS[2])
	if oldLast and tonumber(oldLast) and (now - tonumber(oldLast)) * 1000 <= tonumber(ARGV[2]) then
		moved = {}
		if cap ~= 1 then
			moved = redis.call('LRANGE', KEYS[3], cap > 0 and 1 - cap or 0, -1)
		end
		local t = {}
		for i, e in ipairs(moved) do
			t[i] = lineOf(e) .. '\n'
		end
		body = table.concat(t)
	end
end
if #ARGV >= 6 and keep <= #body then
	for i = 6, #ARGV do
		local id, from = ' ' .. ARGV[i], keep
		while true do
			local at, stop = string.find(body, id, from, true)
			if not at then break end
			local after = string.byte(body, stop + 1)
			if after == 32 or after == 10 then
				return ARGV[i]
			end
			from = at + 1
		end
	end
end
local newHead = '2 ' .. ARGV[1] .. '\n' .. string.sub(body, keep) .. ARGV[5] .. '\n'
if n then
	redis.call('LSET', KEYS[1], drop, newHead)
	if drop > 0 or len > n + 1 then
		redis.call('LTRIM', KEYS[1], drop, n)
	end
	redis.call('PEXPIRE', KEYS[1], ARGV[4])
	return 1
end
if head then
	redis.call('DEL', KEYS[1])
end
redis.call('RPUSH', KEYS[1], newHead)
if moved then
	for i = 1, #moved, 1000 do
		redis.call('RPUSH', KEYS[1], unpack(moved, i, math.min(i + 999, #moved)))
	end
end
if oldLast then
	redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

// expireScript deletes the conversation if its last activity is at or
// before ARGV[1] (Unix µs), in whichever layout it is.
var expireScript = goredis.NewScript(luaLines + `
local head = redis.call('LINDEX', KEYS[1], 0)
local last = head and lastOf(head)
if last then
	if last > tonumber(ARGV[1]) then
		return 0
	end
	return redis.call('DEL', KEYS[1])
end
last = redis.call('GET', KEYS[2])
if not last then
	return 0
end
last = tonumber(last)
if last and last > tonumber(ARGV[1]) then
	return 0
end
return redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
`)

// deleteScript deletes the conversation, in either layout, and returns 1,
// or 0 if there was none.
var deleteScript = goredis.NewScript(luaLines + `
local head = redis.call('LINDEX', KEYS[1], 0)
local n = redis.call('DEL', KEYS[2])
if head and lastOf(head) then
	n = 1
end
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
return n
`)

// Load implements [conversation.Store] with one LRANGE: the head and the
// turns, read at one instant. The conversation is the turns that the head
// has lines for; elements after them are not part of it (see
// appendScript). A turn whose checksum matches its head line was validated
// when it was saved and is split into messages without decoding again. If
// any other is found (written by hand or by another program, or moved
// over from the older layout without its header), every turn is passed
// through [conversation.Repair]: those that do not decode or fail
// [conversation.ValidateTurn] are left out and their number is logged as a
// warning. A conversation without a list, or whose list does not start
// with a head this version reads, is read from the older layout
// (legacy.go).
func (s *Store) Load(ctx context.Context, phone string) (conversation.Conversation, error) {
	elems, err := s.lrange(ctx, s.convKey(phone))
	if err != nil {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", err)
	}
	if c, ok := s.fromList(ctx, phone, elems); ok {
		return c, nil
	}
	return s.loadLegacy(ctx, phone)
}

// replySize is the size of the last LRANGE reply, so that the next one's
// buffer is allocated once.
var replySize atomic.Int64

// lrange returns the elements of the list at key, read in one buffer that
// they share.
func (s *Store) lrange(ctx context.Context, key string) ([][]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(min(replySize.Load(), 1<<20)) + 1024)
	if err := s.rdb.DoRawWriteTo(ctx, &buf, "LRANGE", key, 0, -1).Err(); err != nil {
		return nil, err
	}
	replySize.Store(int64(buf.Len()))
	return splitArray(buf.Bytes())
}

// fromList reads a conversation from its list: its head, then its turns.
// ok is false when the list does not start with a head this version
// reads (or is empty).
func (s *Store) fromList(ctx context.Context, phone string, elems [][]byte) (c conversation.Conversation, ok bool) {
	if len(elems) == 0 {
		return c, false
	}
	micros, sums, ok := parseHead(elems[0])
	if !ok {
		return c, false
	}
	elems = elems[1:]
	if len(elems) >= len(sums) {
		elems = elems[:len(sums)]
	} else {
		sums = nil // fewer turns than lines, changed by hand: trust none
	}
	c = conversation.Conversation{Phone: phone, LastActive: time.UnixMicro(micros), Turns: make([]conversation.Turn, 0, len(elems))}
	undecodable, foreign := 0, false
	for i, e := range elems {
		if sums != nil && checksumMatches(sums[i], e) {
			if t, err := conversation.ParseStoredTurn(e); err == nil {
				c.Turns = append(c.Turns, t)
				continue
			}
		}
		t, trusted, err := decodeTurn(e)
		if err != nil {
			undecodable++
			continue
		}
		foreign = foreign || !trusted
		c.Turns = append(c.Turns, t)
	}
	return s.repaired(ctx, c, undecodable, foreign), true
}

// repaired passes c's turns through conversation.Repair when some were
// not known to be valid (foreign) or left out (undecodable), and logs what
// was dropped.
func (s *Store) repaired(ctx context.Context, c conversation.Conversation, undecodable int, foreign bool) conversation.Conversation {
	if !foreign && undecodable == 0 {
		return c
	}
	// What is in Redis may have been written by another program or an
	// older version; a history with a broken turn would make every later
	// request fail.
	var invalid int
	c.Turns, invalid = conversation.Repair(c.Turns)
	if dropped := undecodable + invalid; dropped > 0 {
		s.log.WarnContext(ctx, "redis: dropped invalid stored turns",
			"phone", maskPhone(c.Phone), "dropped", dropped, "kept", len(c.Turns))
	}
	return c
}

// Append implements [conversation.Store] in one MULTI/EXEC, one round
// trip: appendScript makes the list ready (the new head, the cap, the
// tool_use ids checked, the TTL), then RPUSHX adds the turn. The turn is
// pushed by RPUSHX rather than given to the script, because a script's
// arguments are copied into Lua and collected by Lua's garbage collector,
// which for a 3 kB turn cost Redis more than a SET of it. A refused turn
// is pushed all the same, after the conversation's turns, where it is no
// part of the conversation and the next save drops it; RPUSHX pushes only
// onto a list that exists, so a script that did not run leaves no list
// behind.
// The last activity is kept to the microsecond; the conversation's TTL
// becomes lim.Timeout plus a second.
func (s *Store) Append(ctx context.Context, phone string, turn conversation.Turn, now time.Time, lim conversation.Limits) error {
	elem, line, ids, err := encodeTurn(turn, true)
	if err != nil {
		return fmt.Errorf("redis: append: %w", err)
	}
	ttl := max(lim.Timeout, 0) + ttlSlack
	args := make([]any, 0, 5+len(ids))
	args = append(args, now.UnixMicro(), lim.Timeout.Nanoseconds(), max(lim.MaxTurns, 0),
		(ttl + time.Millisecond - 1).Milliseconds(), line)
	for _, id := range ids {
		args = append(args, id)
	}
	keys := s.keys(phone)
	var res any
	for attempt := 0; ; attempt++ {
		var script *goredis.Cmd
		_, err = s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			script = p.EvalSha(ctx, appendScript.Hash(), keys, args...)
			p.RPushX(ctx, keys[0], elem)
			return nil
		})
		res = script.Val()
		// A script cache emptied (Redis restarted, SCRIPT FLUSH) fails
		// the script alone: the turn was pushed after the turns, where
		// it is no part of the conversation and the script drops it.
		// Loading the script and saving again is then safe.
		if attempt == 0 && err != nil && goredis.HasErrorPrefix(script.Err(), "NOSCRIPT") {
			if err = appendScript.Load(ctx, s.rdb).Err(); err == nil {
				continue
			}
		}
		break
	}
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

// List implements [conversation.Store]. It walks the keys of both layouts
// with SCAN, so it does not block Redis however many conversations there
// are; a conversation saved or deleted while List runs may or may not be
// in the result. Turns counts the stored turns, including any that Load
// would drop as invalid.
func (s *Store) List(ctx context.Context) ([]conversation.Summary, error) {
	seen := map[string]bool{}
	var phones []string
	for _, kind := range []string{convKind, lastKind} {
		var err error
		if phones, err = s.scanSuffixes(ctx, s.prefix+kind, seen, phones); err != nil {
			return nil, fmt.Errorf("redis: list: %w", err)
		}
	}
	slices.Sort(phones)

	out := make([]conversation.Summary, 0, len(phones))
	for chunk := range slices.Chunk(phones, listBatch) {
		heads := make([]*goredis.StringCmd, len(chunk))
		lens := make([]*goredis.IntCmd, len(chunk))
		lasts := make([]*goredis.StringCmd, len(chunk))
		counts := make([]*goredis.IntCmd, len(chunk))
		_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, phone := range chunk {
				heads[i] = p.LIndex(ctx, s.convKey(phone), 0)
				lens[i] = p.LLen(ctx, s.convKey(phone))
				lasts[i] = p.Get(ctx, s.lastKey(phone))
				counts[i] = p.LLen(ctx, s.turnsKey(phone))
			}
			return nil
		})
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, fmt.Errorf("redis: list: %w", err)
		}
		for i, phone := range chunk {
			sum, ok, err := summary(phone, heads[i], lens[i], lasts[i], counts[i])
			if err != nil {
				return nil, fmt.Errorf("redis: list: %w", err)
			}
			if ok {
				out = append(out, sum)
			}
		}
	}
	return out, nil
}

// summary describes phone's conversation from the replies of List's
// pipeline: from its list if it starts with a head, else from the older
// layout. ok is false when it has neither (deleted or expired since the
// scan).
func summary(phone string, head *goredis.StringCmd, n *goredis.IntCmd, last *goredis.StringCmd, count *goredis.IntCmd) (conversation.Summary, bool, error) {
	h, err := head.Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return conversation.Summary{}, false, err
	}
	if micros, sums, ok := parseHead([]byte(h)); ok {
		// The turns the head has lines for (Load's rule), of those
		// that are there.
		turns := min(len(sums), max(int(n.Val())-1, 0))
		return conversation.Summary{Phone: phone, LastActive: time.UnixMicro(micros), Turns: turns}, true, n.Err()
	}
	v, err := last.Result()
	if errors.Is(err, goredis.Nil) {
		return conversation.Summary{}, false, nil
	}
	if err == nil {
		err = count.Err()
	}
	if err != nil {
		return conversation.Summary{}, false, err
	}
	lastActive, _ := parseMicros(v)
	return conversation.Summary{Phone: phone, LastActive: lastActive, Turns: int(count.Val())}, true, nil
}

// parseMicros reads a last activity of the older layout. A value that is
// not a number, written by someone else, reads as the zero time: long
// expired, as the scripts treat it too.
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

// scanSuffixes appends to out what follows prefix in each key that starts
// with it and is not in seen yet, and adds it to seen: SCAN may return a
// key twice, and a phone may have keys of two kinds. It scans listBatch
// keys a call, so it never blocks Redis as KEYS would.
func (s *Store) scanSuffixes(ctx context.Context, prefix string, seen map[string]bool, out []string) ([]string, error) {
	var cursor uint64
	for {
		keys, next, err := s.rdb.Scan(ctx, cursor, redisglob.Prefix(prefix), listBatch).Result()
		if err != nil {
			return out, err
		}
		for _, k := range keys {
			if p := strings.TrimPrefix(k, prefix); !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}
