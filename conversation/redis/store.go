package redis

import (
	"bytes"
	"context"
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

// luaLines is Lua shared by the scripts that read an older layout (see
// list.go and legacy.go). keyOf returns the key of a tool_use id (idKey),
// keysOf the keys of the ids in an older layout's line ("<sum> <id, hex>
// ..."), each behind a space. lineOf returns what follows the field's colon
// in the head line of a turn's value that has none (moved over from an
// older layout, or out of step after a change by hand): "-", since Lua has
// no CRC-32C, and the tool_use ids, from the oldest layout's header member
// or else from the JSON. inUse returns the first of the new turn's tool_use
// ids' keys (ARGV[first...]) that the head lines in text have, each key
// behind a space, or nil.
const luaLines = `
local function keyOf(id)
	return string.sub(redis.sha1hex(id), 1, 16)
end
local function keysOf(hexIDs)
	return (string.gsub(hexIDs, '%x+', function(h)
		return keyOf((string.gsub(h, '%x%x', function(c) return string.char(tonumber(c, 16)) end)))
	end))
end
local function lineOf(e)
	local ids = string.match(e, '^{"_mombot":"1 %x+([%x ]*)",')
	if ids then
		return '-' .. keysOf(ids)
	end
	ids = ''
	local ok, t = pcall(cjson.decode, e)
	if ok and type(t) == 'table' and type(t.messages) == 'table' then
		for _, m in ipairs(t.messages) do
			if type(m) == 'table' and m.role == 'assistant' and type(m.content) == 'table' then
				for _, b in ipairs(m.content) do
					if type(b) == 'table' and b.type == 'tool_use' and type(b.id) == 'string' then
						ids = ids .. ' ' .. keyOf(b.id)
					end
				end
			end
		end
	end
	return '-' .. ids
end
local function inUse(text, first)
	for i = first, #ARGV do
		local id, at = ' ' .. ARGV[i], 1
		while true do
			local stop
			at, stop = string.find(text, id, at, true)
			if not at then break end
			local after = string.byte(text, stop + 1)
			if after == 32 or after == 10 then
				return ARGV[i]
			end
			at = at + 1
		end
	end
end
`

// appendScript links a turn into its conversation (see Store.Append): the
// transaction that runs it has just written the turn's value into its
// field of the conversation's hash.
//
//	KEYS[1] the conversation (hash: the head "h", a field per turn)
//	ARGV[1] now (Unix µs)   ARGV[2] timeout (ns)   ARGV[3] turn cap (0: none)
//	ARGV[4] TTL (ms)   ARGV[5] the store's key prefix
//	ARGV[6] the turn's head line ("<field>:...", without the newline)
//	ARGV[7...] the keys of the turn's tool_use ids (idKey)
//
// Only the hash is declared: the older layouts' keys (the previous
// version's list, list.go, and the oldest layout's last activity, turns and
// ids, legacy.go) are made from the prefix where the script starts a
// conversation, the one place it reads them. Declaring them would cost
// every save four more strings in Lua, about a microsecond of Redis's time
// under storebench (docs/benchmarks.md, "Fifth pass"). Redis runs a script
// that reads keys it did not declare on one server, which is what mombot
// runs on (docs/configuration.md). The turn's field is the line's first
// word.
//
// In a conversation that goes on (a head this version reads, last active
// within the timeout) the turn's tool_use ids must not be those of a turn
// that stays next to it ([conversation.KeptTurns]): they are found in the
// kept turns' head lines. The script then deletes the turn's field and
// returns the key in use. Otherwise it writes the new head (the last
// activity and number of turns, the lines of the turns that stay, the new
// turn's), deletes the fields of the turns that the cap drops, and renews
// the TTL: four calls, HGET, HSET, HDEL and PEXPIRE, with only the head,
// well under a kilobyte, through Lua, and no function made. It returns 1.
//
// Otherwise the conversation starts anew: every field but the new turn's
// goes (an expired conversation's turns, or the field of a save whose
// script did not run), with the turns that stay of a conversation in an
// older layout if there is one, whose keys are then deleted: the list, or
// else the oldest layout's keys. The new turn's ids are checked against
// those turns too.
//
// Microseconds since 1970 and their differences times 1000 stay below 2^53,
// so Lua's doubles compare them exactly. Redis does not undo a script that
// fails half way, so everything that can fail (a key of another type) is
// read before the first write.
var appendScript = goredis.NewScript(`
local now, cap = tonumber(ARGV[1]), tonumber(ARGV[3])
local head = redis.call('HGET', KEYS[1], 'h')
local last, n, keep
if head then
	last, n, keep = string.match(head, '^3 (%-?%d+) (%d+)\n()')
end
if last and (now - tonumber(last)) * 1000 <= tonumber(ARGV[2]) then
	-- The head's lines from keep on (each ending in a newline) are the
	-- kept turns', found by position without copying them out.
	n = tonumber(n)
	local drop, dropped = 0, {}
	if cap > 0 and n >= cap then
		drop = n - cap + 1
		for i = 1, drop do
			local nl = string.find(head, '\n', keep, true)
			local colon = string.find(head, ':', keep, true)
			if not (nl and colon and colon < nl) then
				keep = nil
				break
			end
			dropped[i] = string.sub(head, keep, colon - 1)
			keep = nl + 1
		end
	end
	if keep then
		-- inUse's check (luaLines), written out here so that the usual
		-- save makes no function.
		for i = 7, #ARGV do
			local id, at = ' ' .. ARGV[i], keep
			while true do
				local stop
				at, stop = string.find(head, id, at, true)
				if not at then break end
				local after = string.byte(head, stop + 1)
				if after == 32 or after == 10 then
					redis.call('HDEL', KEYS[1], string.match(ARGV[6], '^[^:]*'))
					return ARGV[i]
				end
				at = at + 1
			end
		end
		redis.call('HSET', KEYS[1], 'h', '3 ' .. ARGV[1] .. ' ' .. (n - drop + 1) .. '\n' .. string.sub(head, keep) .. ARGV[6] .. '\n')
		if drop > 0 then
			redis.call('HDEL', KEYS[1], unpack(dropped))
		end
		redis.call('PEXPIRE', KEYS[1], ARGV[4])
		return 1
	end
	last = nil -- not the lines the head counts: not a head this version reads
end
` + luaLines + `
local f = string.match(ARGV[6], '^[^:]*')
local phone = string.sub(KEYS[1], #ARGV[5] + #'chat:' + 1)
local listKey, lastKey = ARGV[5] .. 'conv:' .. phone, ARGV[5] .. 'last:' .. phone
local turnsKey, idsKey = ARGV[5] .. 'turns:' .. phone, ARGV[5] .. 'ids:' .. phone
-- A new conversation, read before anything is written: what stays of an
-- older layout's conversation, as head lines (after the field's colon)
-- and values.
local lines, elems, older = {}, {}, nil
if not last then
	local t = redis.call('TYPE', listKey).ok
	local first = t == 'list' and redis.call('LINDEX', listKey, 0)
	local listLast = first and string.match(first, '^2 (%-?%d+)\n')
	if listLast then
		older = 'list'
		if (now - tonumber(listLast)) * 1000 <= tonumber(ARGV[2]) then
			elems = redis.call('LRANGE', listKey, 1, -1)
			local pos = string.find(first, '\n', 1, true) + 1
			while true do
				local nl = string.find(first, '\n', pos, true)
				if not nl then break end
				-- "<sum> <id, hex>...": the ids become their keys.
				local l = string.sub(first, pos, nl - 1)
				local sp = string.find(l, ' ', 1, true)
				if sp then
					l = string.sub(l, 1, sp - 1) .. keysOf(string.sub(l, sp))
				end
				lines[#lines + 1] = l
				pos = nl + 1
			end
			if #elems < #lines then
				-- Fewer turns than lines (changed by hand): the turns are
				-- the conversation, their lines built again.
				lines = {}
				for i, e in ipairs(elems) do
					lines[i] = lineOf(e)
				end
			end
			for i = #lines + 1, #elems do
				elems[i] = nil -- after the turns: a refused save's
			end
		end
	else
		local oldLast = redis.call('GET', lastKey)
		if oldLast then
			older = 'keys'
			if tonumber(oldLast) and (now - tonumber(oldLast)) * 1000 <= tonumber(ARGV[2]) then
				elems = redis.call('LRANGE', turnsKey, 0, -1)
				for i, e in ipairs(elems) do
					lines[i] = lineOf(e)
				end
			end
		end
	end
end
-- The cap keeps the newest; the new turn is one of them.
local from = 1
if cap > 0 then
	from = math.max(1, #lines - cap + 2)
end
local body = {}
for i = from, #lines do
	body[#body + 1] = 'm' .. i .. ':' .. lines[i] .. '\n'
end
body = table.concat(body)
local id = inUse(body, 7)
if id then
	redis.call('HDEL', KEYS[1], f)
	return id
end
local gone = {}
for _, k in ipairs(redis.call('HKEYS', KEYS[1])) do
	if k ~= f then
		gone[#gone + 1] = k
	end
end
for i = 1, #gone, 1000 do
	redis.call('HDEL', KEYS[1], unpack(gone, i, math.min(i + 999, #gone)))
end
for i = from, #lines, 500 do
	local args = {}
	for j = i, math.min(i + 499, #lines) do
		args[#args + 1] = 'm' .. j
		args[#args + 1] = elems[j]
	end
	redis.call('HSET', KEYS[1], unpack(args))
end
if older == 'list' then
	redis.call('DEL', listKey)
elseif older == 'keys' then
	redis.call('DEL', lastKey, turnsKey, idsKey)
end
redis.call('HSET', KEYS[1], 'h', '3 ' .. ARGV[1] .. ' ' .. (#lines - from + 2) .. '\n' .. body .. ARGV[6] .. '\n')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

// storedLast is Lua for the scripts below: last is the last activity of
// the conversation in whichever layout it is (the hash if it has a head
// this version reads, else the previous version's list, else the oldest
// layout), kind the layout ("hash", "list" or "keys"), both nil if there
// is none. A last activity of the oldest layout that is not a number
// counts as long ago. A key of another type than its layout's fails the
// script before it writes anything.
const storedLast = `
local last, kind
local head = redis.call('HGET', KEYS[1], 'h')
last = head and tonumber(string.match(head, '^3 (%-?%d+) %d+\n'))
if last then
	kind = 'hash'
else
	local t = redis.call('TYPE', KEYS[2]).ok
	if t == 'list' then
		last = tonumber(string.match(redis.call('LINDEX', KEYS[2], 0) or '', '^2 (%-?%d+)\n'))
	elseif t ~= 'none' then
		return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
	end
	if last then
		kind = 'list'
	else
		local v = redis.call('GET', KEYS[3])
		if v then
			kind, last = 'keys', tonumber(v) or 0
		end
	end
end
`

// expireScript deletes the conversation if its last activity is at or
// before ARGV[1] (Unix µs), in whichever layout it is.
var expireScript = goredis.NewScript(storedLast + `
if not last or last > tonumber(ARGV[1]) then
	return 0
end
if kind == 'keys' then
	return redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
elseif kind == 'list' then
	return redis.call('DEL', KEYS[2])
end
return redis.call('DEL', KEYS[1])
`)

// deleteScript deletes the conversation, in every layout, and returns 1,
// or 0 if there was none.
var deleteScript = goredis.NewScript(storedLast + `
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
if last then
	return 1
end
return 0
`)

// Load implements [conversation.Store] with one HGETALL: the head and the
// turns, read at one instant. The conversation is the turns that the head
// has lines for, in the head's order; fields of no line (the turn of a
// save that was refused) are not part of it. A turn whose checksum
// matches its line was validated when it was saved and is split into
// messages without decoding again. If any other is found (written by
// hand or by another program, or moved over from an older layout), every
// turn is passed through [conversation.Repair]: those that do not decode
// or fail [conversation.ValidateTurn] are left out and their number is
// logged as a warning. A conversation without a hash, or whose hash has
// no head this version reads, is read from the older layouts (list.go,
// legacy.go), in a second round trip.
func (s *Store) Load(ctx context.Context, phone string) (conversation.Conversation, error) {
	pairs, err := s.readRaw(ctx, "HGETALL", s.chatKey(phone))
	if err != nil {
		return conversation.Conversation{}, fmt.Errorf("redis: load: %w", err)
	}
	if c, ok := s.fromHash(ctx, phone, pairs); ok {
		return c, nil
	}
	return s.loadOlder(ctx, phone)
}

// replySize is the size of the last raw reply, so that the next one's
// buffer is allocated once.
var replySize atomic.Int64

// readRaw runs a command that answers with an array of strings, or a map
// of them (HGETALL), and returns them read in one buffer that they share:
// a map's keys and values alternate. An error reply is a replyError.
func (s *Store) readRaw(ctx context.Context, args ...any) ([][]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(min(replySize.Load(), 1<<20)) + 1024)
	if err := s.rdb.DoRawWriteTo(ctx, &buf, args...).Err(); err != nil {
		return nil, err
	}
	replySize.Store(int64(buf.Len()))
	return splitArray(buf.Bytes())
}

// fromHash reads a conversation from the fields and values of its hash,
// alternating. ok is false when it has no head this version reads.
func (s *Store) fromHash(ctx context.Context, phone string, pairs [][]byte) (c conversation.Conversation, ok bool) {
	var head []byte
	for i := 0; i+1 < len(pairs); i += 2 {
		if string(pairs[i]) == headField {
			head = pairs[i+1]
			break
		}
	}
	micros, lines, ok := parseHead(head)
	if !ok {
		return c, false
	}
	r := newTurnReader(phone, time.UnixMicro(micros), len(lines))
	for _, l := range lines {
		var elem []byte
		for i := 0; i+1 < len(pairs); i += 2 {
			if bytes.Equal(pairs[i], l.field) {
				elem = pairs[i+1]
				break
			}
		}
		if elem == nil { // its field deleted by hand
			r.undecodable++
			continue
		}
		r.add(l.sum, elem)
	}
	return s.repaired(ctx, r), true
}

// repaired returns the conversation r read, passing its turns through
// conversation.Repair when some were not known to be valid or left out,
// and logs what was dropped.
func (s *Store) repaired(ctx context.Context, r *turnReader) conversation.Conversation {
	c := r.c
	if !r.foreign && r.undecodable == 0 {
		return c
	}
	// What is in Redis may have been written by another program or an
	// older version; a history with a broken turn would make every later
	// request fail.
	var invalid int
	c.Turns, invalid = conversation.Repair(c.Turns)
	if dropped := r.undecodable + invalid; dropped > 0 {
		s.log.WarnContext(ctx, "redis: dropped invalid stored turns",
			"phone", maskPhone(c.Phone), "dropped", dropped, "kept", len(c.Turns))
	}
	return c
}

// Append implements [conversation.Store] in one MULTI/EXEC, one round
// trip: an HSET writes the turn's value into a new field of the
// conversation's hash, then appendScript links it into the head (the cap,
// the expiry and the tool_use ids checked) and renews the TTL. The
// turn is written by HSET rather than given to the script, because a
// script's arguments are copied into Lua and collected by Lua's garbage
// collector, which for a 3 kB turn cost Redis more than a SET of it. A
// refused turn's field is deleted by the script. If the script did not
// run (Redis restarted and lost its script cache), the field is there but
// in no line, where it is no part of the conversation; the store loads the
// script and saves again, and a save that starts a conversation anew
// deletes such fields. A last PEXPIRE NX gives the hash a TTL even then,
// if the HSET made it, and changes no TTL that is set.
// The last activity is kept to the microsecond; the conversation's TTL
// becomes lim.Timeout plus a second.
func (s *Store) Append(ctx context.Context, phone string, turn conversation.Turn, now time.Time, lim conversation.Limits) error {
	elem, line, ids, err := encodeTurn(turn, true)
	if err != nil {
		return fmt.Errorf("redis: append: %w", err)
	}
	field := newField()
	ttl := max(lim.Timeout, 0) + ttlSlack
	ttlMillis := (ttl + time.Millisecond - 1).Milliseconds()
	args := make([]any, 0, 6+len(ids))
	args = append(args, now.UnixMicro(), lim.Timeout.Nanoseconds(), max(lim.MaxTurns, 0),
		ttlMillis, s.prefix, field+":"+line)
	for _, id := range ids {
		args = append(args, id)
	}
	keys := []string{s.chatKey(phone)}
	var res any
	for attempt := 0; ; attempt++ {
		var script *goredis.Cmd
		_, err = s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.HSet(ctx, keys[0], field, elem)
			script = p.EvalSha(ctx, appendScript.Hash(), keys, args...)
			return nil
		})
		res = script.Val()
		// A script cache emptied (Redis restarted, SCRIPT FLUSH) fails
		// the script alone: the turn's field is in no line, where it is
		// no part of the conversation. Loading the script and saving
		// again, into the same field, is then safe.
		if attempt == 0 && goredis.HasErrorPrefix(script.Err(), "NOSCRIPT") {
			if err = appendScript.Load(ctx, s.rdb).Err(); err == nil {
				continue
			}
		}
		break
	}
	if err != nil {
		return fmt.Errorf("redis: append: %w", err)
	}
	if key, ok := res.(string); ok {
		id := key // found by its key: one of the turn's ids
		for _, tid := range turn.ToolUseIDs() {
			if idKey(tid) == key {
				id = tid
				break
			}
		}
		return fmt.Errorf("redis: append: %w", conversation.CheckToolIDs([]string{id}, []string{id}))
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

// List implements [conversation.Store]. It walks the keys of every layout
// with SCAN, so it does not block Redis however many conversations there
// are; a conversation saved or deleted while List runs may or may not be
// in the result. Turns counts the stored turns, including any that Load
// would drop as invalid.
func (s *Store) List(ctx context.Context) ([]conversation.Summary, error) {
	seen := map[string]bool{}
	var phones []string
	for _, kind := range []string{chatKind, listKind, lastKind} {
		var err error
		if phones, err = s.scanSuffixes(ctx, s.prefix+kind, seen, phones); err != nil {
			return nil, fmt.Errorf("redis: list: %w", err)
		}
	}
	slices.Sort(phones)

	out := make([]conversation.Summary, 0, len(phones))
	for chunk := range slices.Chunk(phones, listBatch) {
		cmds := make([]summaryCmds, len(chunk))
		_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, phone := range chunk {
				cmds[i] = summaryCmds{
					head: p.HGet(ctx, s.chatKey(phone), headField), fields: p.HLen(ctx, s.chatKey(phone)),
					listHead: p.LIndex(ctx, s.listKey(phone), 0), listLen: p.LLen(ctx, s.listKey(phone)),
					last: p.Get(ctx, s.lastKey(phone)), count: p.LLen(ctx, s.turnsKey(phone)),
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, goredis.Nil) && !goredis.HasErrorPrefix(err, "WRONGTYPE") {
			return nil, fmt.Errorf("redis: list: %w", err)
		}
		for i, phone := range chunk {
			sum, ok, err := cmds[i].summary(phone)
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

// summaryCmds are the replies of List's pipeline for one phone: its hash's
// head and number of fields, the previous version's list head and length,
// and the oldest layout's last activity and number of turns. A key of
// another type than its layout's answers WRONGTYPE, and is passed over.
type summaryCmds struct {
	head, listHead, last *goredis.StringCmd
	fields, listLen      *goredis.IntCmd
	count                *goredis.IntCmd
}

// summary describes phone's conversation: from its hash if it has a head,
// else from the list, else from the oldest layout. ok is false when it has
// none (deleted or expired since the scan).
func (c summaryCmds) summary(phone string) (conversation.Summary, bool, error) {
	if h, err := c.head.Result(); err == nil {
		if micros, lines, ok := parseHead([]byte(h)); ok {
			return headed(phone, micros, len(lines), c.fields)
		}
	} else if !errors.Is(err, goredis.Nil) && !goredis.HasErrorPrefix(err, "WRONGTYPE") {
		return conversation.Summary{}, false, err
	}
	if h, err := c.listHead.Result(); err == nil {
		if micros, sums, ok := parseListHead([]byte(h)); ok {
			return headed(phone, micros, len(sums), c.listLen)
		}
	} else if !errors.Is(err, goredis.Nil) && !goredis.HasErrorPrefix(err, "WRONGTYPE") {
		return conversation.Summary{}, false, err
	}
	v, err := c.last.Result()
	if errors.Is(err, goredis.Nil) {
		return conversation.Summary{}, false, nil
	}
	if err == nil {
		err = c.count.Err()
	}
	if err != nil {
		return conversation.Summary{}, false, err
	}
	lastActive, _ := parseMicros(v)
	return conversation.Summary{Phone: phone, LastActive: lastActive, Turns: int(c.count.Val())}, true, nil
}

// headed is the summary of a conversation whose head, in a hash or a
// list, has lines for that many turns, in a key of n members with the
// head: the turns the head has lines for (Load's rule), of those that are
// there.
func headed(phone string, micros int64, lines int, n *goredis.IntCmd) (conversation.Summary, bool, error) {
	turns := min(lines, max(int(n.Val())-1, 0))
	return conversation.Summary{Phone: phone, LastActive: time.UnixMicro(micros), Turns: turns}, true, n.Err()
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
