package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/redisglob"
)

// DefaultQueueTTL is how long a sender's queue waits for a replica to take
// it, after its last push, when [InboxOptions].QueueTTL is zero and MaxAge
// at most a day: a day and an hour, an hour beyond the age (a day by
// default) after which its messages are skipped anyway.
const DefaultQueueTTL = 24*time.Hour + queueGrace

// queueGrace is how long a sender's queue outlives the age after which its
// messages would be skipped anyway.
const queueGrace = time.Hour

// InboxOptions configure [NewInbox]. The zero value means the defaults.
type InboxOptions struct {
	// Prefix is put in front of every key, as in [LockerOptions]; "" means
	// DefaultPrefix.
	Prefix string
	// QueueTTL is how long a sender's queue lives after its last push,
	// should every replica stop before one takes it; 0 means an hour
	// beyond MaxAge, and never less than DefaultQueueTTL.
	QueueTTL time.Duration
	// MaxAge is how old a message may be and still be answered (the
	// webhook server's whatsapp.Config.MaxAge, whose zero is a day), from
	// which a zero QueueTTL is worked out.
	MaxAge time.Duration
}

// Inbox is a [delivery.Inbox] shared by every process on the Redis: the
// webhook server keeps each sender's messages in it from their
// acknowledgement until their reply is sent, so that whichever replica
// answers them takes them in the order they arrived, a replica that dies
// while answering leaves them to another, and a message delivered twice,
// to one replica or to two, is answered once. It is safe for concurrent
// use.
//
// Its keys, under the prefix:
//
//	queue:<sender>     list: the sender's messages, oldest first
//	sending:<sender>   string: the id of the head of the queue, marked by
//	                   Sending (TTL: QueueTTL)
//	waiting:wamid:<id> string: the message is in a queue (TTL: QueueTTL)
//	seen:wamid:<id>    string: the message was handled (TTL: delivery.HandledFor)
//	handled:<sender>   sorted set: the ids handled for the sender, scored by
//	                   when, in ms (TTL: delivery.HandledFor after the last)
//
// Push, Sending and Done are each one Lua script, which Redis runs alone:
// Push checks the two marks of each id of its batch and appends; Sending
// sets the sender's sending key to the id if it is the head's; Done
// removes the head of the queue if it is the message, and with it the
// sending key, marks it handled, records it among its sender's handled
// ids and drops its waiting mark, so that a message is in the queue or
// marked handled, never both and never neither. Peek reads the head and
// the sending key in one transaction (MULTI), and reports the head marked
// if the key holds its id: a mark left by a head removed otherwise (an
// expired queue, Erase) marks no other message. Erase is one script too,
// and so is RecordHandled, which sets an id's handled mark, for what is
// left of delivery.HandledFor since the time given, and adds it to its
// sender's set, unless the id has either mark. Keys and HandledIDs use
// SCAN, never KEYS.
type Inbox struct {
	rdb    *goredis.Client
	prefix string
	ttl    time.Duration
}

var _ delivery.Inbox = (*Inbox)(nil)

// NewInbox returns an Inbox on rdb.
func NewInbox(rdb *goredis.Client, opts *InboxOptions) (*Inbox, error) {
	var o InboxOptions
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.QueueTTL == 0 {
		o.QueueTTL = max(o.MaxAge+queueGrace, DefaultQueueTTL)
	}
	if o.QueueTTL < time.Millisecond {
		return nil, fmt.Errorf("redis: inbox: queue TTL must be positive, got %v", o.QueueTTL)
	}
	return &Inbox{rdb: rdb, prefix: o.Prefix, ttl: o.QueueTTL}, nil
}

func (q *Inbox) queueKey(key string) string { return q.prefix + "queue:" + key }
func (q *Inbox) seenKey(id string) string   { return q.prefix + "seen:wamid:" + id }
func (q *Inbox) waitKey(id string) string   { return q.prefix + "waiting:wamid:" + id }
func (q *Inbox) sendingKey(key string) string {
	return q.prefix + "sending:" + key
}
func (q *Inbox) handledKey(key string) string {
	return q.prefix + "handled:" + key
}

// pushScript pushes ARGV[2], ARGV[3], ... in order: the message ARGV[1+i]
// with the keys KEYS[3i-2] (its queue), KEYS[3i-1] (its handled mark) and
// KEYS[3i] (its waiting mark) is appended to its queue unless one of its
// marks exists; then the queue's TTL is renewed and the waiting mark set,
// both to ARGV[1] ms. It returns 1 for each message kept, 0 for each
// duplicate.
var pushScript = goredis.NewScript(`
local out = {}
for i = 1, #ARGV - 1 do
	local q, seen, wait = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
	if redis.call('EXISTS', seen) == 1 or redis.call('EXISTS', wait) == 1 then
		out[i] = 0
	else
		redis.call('RPUSH', q, ARGV[i+1])
		redis.call('PEXPIRE', q, ARGV[1])
		redis.call('SET', wait, '1', 'PX', ARGV[1])
		out[i] = 1
	end
end
return out
`)

// Push implements [delivery.Inbox]: one script for the batch. Once it
// returns nil the messages are in Redis, as durable as Redis's
// persistence makes them.
func (q *Inbox) Push(ctx context.Context, batch ...delivery.Message) ([]bool, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, 3*len(batch))
	args := make([]any, 0, 1+len(batch))
	args = append(args, q.ttl.Milliseconds())
	for _, m := range batch {
		item, err := m.MarshalJSON()
		if err != nil {
			return nil, err
		}
		keys = append(keys, q.queueKey(m.Key), q.seenKey(m.ID), q.waitKey(m.ID))
		args = append(args, item)
	}
	kept, err := pushScript.Run(ctx, q.rdb, keys, args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("redis: inbox push: %w", err)
	}
	if len(kept) != len(batch) {
		return nil, fmt.Errorf("redis: inbox push: %d answers for %d messages", len(kept), len(batch))
	}
	dup := make([]bool, len(batch))
	for i, k := range kept {
		dup[i] = k == 0
	}
	return dup, nil
}

// Peek implements [delivery.Inbox]: one round trip, a MULTI of the head
// and the sending key.
func (q *Inbox) Peek(ctx context.Context, key string) (delivery.Message, bool, error) {
	var head, sending *goredis.StringCmd
	_, err := q.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		head = p.LIndex(ctx, q.queueKey(key), 0)
		sending = p.Get(ctx, q.sendingKey(key))
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return delivery.Message{}, false, fmt.Errorf("redis: inbox peek: %w", err)
	}
	item, err := head.Bytes()
	if errors.Is(err, goredis.Nil) {
		return delivery.Message{}, false, nil
	}
	if err != nil {
		return delivery.Message{}, false, fmt.Errorf("redis: inbox peek: %w", err)
	}
	mark, err := sending.Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return delivery.Message{}, false, fmt.Errorf("redis: inbox peek: %w", err)
	}
	var m delivery.Message
	if err := m.UnmarshalJSON(item); err != nil {
		// Not a message mombot pushed: give it the head's own id, so that
		// Done removes it.
		m = delivery.Message{ID: unreadablePrefix + string(item), Key: key, Body: []byte("null")}
	}
	m.Sending = mark != "" && mark == m.ID
	return m, true, nil
}

// sendingScript sets KEYS[2] to ARGV[1] for ARGV[2] ms if the id of the
// head of the list KEYS[1] (its "id", or for an item mombot cannot read,
// the item itself after ARGV[3]) is ARGV[1].
var sendingScript = goredis.NewScript(headIsLua + `
if headIs(KEYS[1], ARGV[1], ARGV[3]) then
	redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
	return 1
end
return 0
`)

// headIsLua defines, for the scripts that act on the head of a queue, the
// Lua function headIs(queue, id, prefix): whether the head of the list
// queue has the id id, its "id" or, for an item mombot cannot read, the
// item itself after prefix (unreadablePrefix, as Peek names it).
const headIsLua = `
local function headIs(queue, id, prefix)
	local head = redis.call('LINDEX', queue, 0)
	if not head then
		return false
	end
	local ok, m = pcall(cjson.decode, head)
	if ok and type(m) == 'table' and m.id == id then
		return true
	end
	return prefix .. head == id
end
`

// Sending implements [delivery.Inbox]: one script.
func (q *Inbox) Sending(ctx context.Context, key, id string) error {
	keys := []string{q.queueKey(key), q.sendingKey(key)}
	if err := sendingScript.Run(ctx, q.rdb, keys, id, q.ttl.Milliseconds(), unreadablePrefix).Err(); err != nil {
		return fmt.Errorf("redis: inbox sending: %w", err)
	}
	return nil
}

// unreadablePrefix marks the id Peek gives an item it cannot read.
const unreadablePrefix = "\x00unreadable:"

// doneScript removes the head of the list KEYS[1] if its id (its "id", or
// for an item mombot cannot read, the item itself after ARGV[3]) is
// ARGV[1], and with it the sending mark KEYS[5]; and but for such an item
// sets KEYS[2] for ARGV[2] ms, deletes KEYS[3], and adds ARGV[1] to the
// sorted set KEYS[4] scored by Redis's clock, dropping the ids older than
// ARGV[2] ms from it and keeping it ARGV[2] ms.
var doneScript = goredis.NewScript(headIsLua + `
if headIs(KEYS[1], ARGV[1], ARGV[3]) then
	redis.call('LPOP', KEYS[1])
	redis.call('DEL', KEYS[5])
end
if string.sub(ARGV[1], 1, #ARGV[3]) ~= ARGV[3] then
	redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
	redis.call('DEL', KEYS[3])
	local t = redis.call('TIME')
	local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[2]))
	redis.call('ZADD', KEYS[4], now, ARGV[1])
	redis.call('PEXPIRE', KEYS[4], ARGV[2])
end
return 1
`)

// Done implements [delivery.Inbox]: one script.
func (q *Inbox) Done(ctx context.Context, key, id string) error {
	keys := []string{q.queueKey(key), q.seenKey(id), q.waitKey(id), q.handledKey(key), q.sendingKey(key)}
	if err := doneScript.Run(ctx, q.rdb, keys, id, delivery.HandledFor.Milliseconds(), unreadablePrefix).Err(); err != nil {
		return fmt.Errorf("redis: inbox done: %w", err)
	}
	return nil
}

// Keys implements [delivery.Inbox], with SCAN, so it does not block Redis
// however many keys it holds.
func (q *Inbox) Keys(ctx context.Context) ([]string, error) {
	prefix := q.prefix + "queue:"
	seen := map[string]bool{}
	var keys []string
	iter := q.rdb.Scan(ctx, 0, redisglob.Prefix(prefix), 1000).Iterator()
	for iter.Next(ctx) {
		// SCAN may return a key more than once.
		if k := strings.TrimPrefix(iter.Val(), prefix); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("redis: inbox keys: %w", err)
	}
	return keys, nil
}

// eraseScript deletes the list KEYS[1] with the waiting marks of its
// messages and its sending mark KEYS[3], and the sorted set KEYS[2] with
// the handled marks of its ids,
// the marks' keys being ARGV[1] followed by their kind and the id. It
// returns how many messages and handled marks it deleted.
var eraseScript = goredis.NewScript(`
local queued = 0
for _, item in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
	queued = queued + 1
	local ok, m = pcall(cjson.decode, item)
	if ok and type(m) == 'table' then
		local id = m.id
		if type(id) == 'string' then
			redis.call('DEL', ARGV[1] .. 'waiting:wamid:' .. id)
		end
	end
end
redis.call('DEL', KEYS[1], KEYS[3])
local handled = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
	handled = handled + redis.call('DEL', ARGV[1] .. 'seen:wamid:' .. id)
end
redis.call('DEL', KEYS[2])
return {queued, handled}
`)

// Erase implements [delivery.Inbox]: one script. The keys are deleted;
// Redis's append-only file and snapshots hold older copies until it
// rewrites them.
func (q *Inbox) Erase(ctx context.Context, key string) (queued, handled int, err error) {
	n, err := eraseScript.Run(ctx, q.rdb, []string{q.queueKey(key), q.handledKey(key), q.sendingKey(key)}, q.prefix).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("redis: inbox erase: %w", err)
	}
	return int(n[0]), int(n[1]), nil
}

// HandledIDs implements [delivery.Inbox], with SCAN: the ids are the
// handled marks (seen:wamid:<id>) alive; each one's sender and time come
// from the sender's handled set, and for a mark in none (recorded before
// the sets were kept) the time is worked out from the mark's TTL and the
// sender is "".
func (q *Inbox) HandledIDs(ctx context.Context) ([]delivery.HandledID, error) {
	type rec struct {
		key string
		ms  int64
	}
	bySet := map[string]rec{}
	setPrefix := q.prefix + "handled:"
	iter := q.rdb.Scan(ctx, 0, redisglob.Prefix(setPrefix), 1000).Iterator()
	for iter.Next(ctx) {
		key := strings.TrimPrefix(iter.Val(), setPrefix)
		zs, err := q.rdb.ZRangeWithScores(ctx, iter.Val(), 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("redis: inbox handled ids: %w", err)
		}
		for _, z := range zs {
			id, _ := z.Member.(string)
			if r, ok := bySet[id]; !ok || int64(z.Score) > r.ms {
				bySet[id] = rec{key: key, ms: int64(z.Score)}
			}
		}
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("redis: inbox handled ids: %w", err)
	}
	now, err := q.rdb.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: inbox handled ids: %w", err)
	}
	markPrefix := q.prefix + "seen:wamid:"
	seen := map[string]bool{}
	var marks []string
	iter = q.rdb.Scan(ctx, 0, redisglob.Prefix(markPrefix), 1000).Iterator()
	for iter.Next(ctx) {
		// SCAN may return a key more than once.
		if !seen[iter.Val()] {
			seen[iter.Val()] = true
			marks = append(marks, iter.Val())
		}
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("redis: inbox handled ids: %w", err)
	}
	var out []delivery.HandledID
	for chunk := range slices.Chunk(marks, 1000) {
		cmds := make([]*goredis.DurationCmd, len(chunk))
		_, err := q.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, k := range chunk {
				cmds[i] = p.PTTL(ctx, k)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("redis: inbox handled ids: %w", err)
		}
		for i, k := range chunk {
			ttl := cmds[i].Val()
			if ttl <= 0 {
				continue // expired since the scan, or kept for ever by another hand
			}
			id := strings.TrimPrefix(k, markPrefix)
			h := delivery.HandledID{ID: id, At: now.Add(ttl - delivery.HandledFor).Truncate(time.Millisecond).UTC()}
			if r, ok := bySet[id]; ok {
				h.Key, h.At = r.key, time.UnixMilli(r.ms).UTC()
			}
			out = append(out, h)
		}
	}
	return out, nil
}

// recordScript records ARGV[3i-1] as handled at ARGV[3i] (ms, by Redis's
// clock; a time after now counts as now) for delivery.HandledFor (ARGV[1]
// ms) from then, unless that time is past or it has a handled mark
// KEYS[3i-2] or a waiting mark KEYS[3i-1]: it sets the handled mark, and
// if ARGV[3i+1] is "1" adds the id to its sender's handled set KEYS[3i],
// keeping the set as long as its longest-lived id. It returns how many ids
// it recorded.
var recordScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local life = tonumber(ARGV[1])
local n = 0
for i = 1, #KEYS / 3 do
	local seen, wait, set = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
	local id, at, keyed = ARGV[3*i-1], math.min(tonumber(ARGV[3*i]), now), ARGV[3*i+1]
	local ttl = at + life - now
	if ttl > 0 and redis.call('EXISTS', seen) == 0 and redis.call('EXISTS', wait) == 0 then
		redis.call('SET', seen, '1', 'PX', ttl)
		if keyed == '1' then
			redis.call('ZADD', set, at, id)
			if redis.call('PTTL', set) < ttl then
				redis.call('PEXPIRE', set, ttl)
			end
		end
		n = n + 1
	end
end
return n
`)

// RecordHandled implements [delivery.Inbox]: one script.
func (q *Inbox) RecordHandled(ctx context.Context, hs ...delivery.HandledID) (int, error) {
	if len(hs) == 0 {
		return 0, nil
	}
	keys := make([]string, 0, 3*len(hs))
	args := make([]any, 0, 1+3*len(hs))
	args = append(args, delivery.HandledFor.Milliseconds())
	for _, h := range hs {
		if h.ID == "" {
			continue
		}
		keyed := "0"
		if h.Key != "" {
			keyed = "1"
		}
		keys = append(keys, q.seenKey(h.ID), q.waitKey(h.ID), q.handledKey(h.Key))
		args = append(args, h.ID, h.At.UnixMilli(), keyed)
	}
	n, err := recordScript.Run(ctx, q.rdb, keys, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("redis: inbox record handled: %w", err)
	}
	return n, nil
}
