package redis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/redisglob"
	"github.com/mombot/mombot/phone"
)

// The fields of a record's hash.
const (
	dataField    = "d"
	versionField = "v"
)

// counterKey is the key, under the prefix, of the last version given out.
const counterKey = "version"

// putScript writes a record if its stored version is the expected one, as
// one step. It knows records and versions only.
//
// The record's new hash, its data, is written by Put under a key of its
// own (tempKey) in the same transaction, and the script renames it over
// the record: the data never passes through Lua, which copies what it is
// given (some 30 µs for a 27 kB conversation, several SETs' worth).
//
// KEYS: the record's hash, the version counter, the new hash. ARGV: the
// expected version ("0": no record), the TTL in milliseconds ("0": none).
// It returns the new version, or nil when the stored version is another;
// the new hash is gone either way.
var putScript = goredis.NewScript(`
if redis.call('HEXISTS', KEYS[3], 'd') == 0 then
	return redis.error_reply('ERR the new data was not written')
end
local v = redis.pcall('HGET', KEYS[1], 'v')
if type(v) == 'table' and v.err then
	redis.call('UNLINK', KEYS[3])
	return v
end
if (v or '0') ~= ARGV[1] then
	redis.call('UNLINK', KEYS[3])
	return false
end
v = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[3], 'v', string.format('%d', v))
redis.call('RENAME', KEYS[3], KEYS[1])
if ARGV[2] == '0' then
	redis.call('PERSIST', KEYS[1])
else
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return v
`)

// tempKey is the key, under the prefix and followed by a random name, of
// a record's new hash before putScript renames it over the record, in the
// same transaction.
const tempKey = "put:"

// deleteScript deletes a record if its stored version is the expected one.
//
// KEYS: the record's hash. ARGV: the expected version ("0": any). It
// returns 1 when it deleted, 0 when there is no record, -1 when the stored
// version is another.
var deleteScript = goredis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return 0 end
if ARGV[1] ~= '0' and v ~= ARGV[1] then return -1 end
redis.call('UNLINK', KEYS[1])
return 1
`)

// Batches of List: keys asked for per SCAN step, and records fetched per
// pipeline (a conversation is some 30 kB, so a pipeline's reply stays
// well within the read timeout).
const (
	scanCount  = 1000
	fetchBatch = 100
)

// errKind is returned for a kind that would share keys with another.
var errKind = errors.New("a kind may not contain ':'")

// key returns the Redis key of kind's record under key.
func (s *Store) key(kind conversation.Kind, key string) (string, error) {
	if strings.Contains(string(kind), ":") {
		return "", errKind
	}
	return s.prefix + string(kind) + ":" + key, nil
}

// Get implements [conversation.Store] with one HMGET.
func (s *Store) Get(ctx context.Context, kind conversation.Kind, key string) (conversation.Record, error) {
	fail := func(err error) (conversation.Record, error) {
		return conversation.Record{}, fmt.Errorf("redis: get %s %s: %w", kind, phone.Mask(key), err)
	}
	rk, err := s.key(kind, key)
	if err != nil {
		return fail(err)
	}
	vals, err := s.rdb.HMGet(ctx, rk, dataField, versionField).Result()
	if err != nil {
		return fail(err)
	}
	rec, ok, err := record(key, vals)
	switch {
	case err != nil:
		return fail(err)
	case !ok:
		return fail(conversation.ErrNotFound)
	}
	return rec, nil
}

// record makes the record under key from the reply of an HMGET of its
// data and version; ok is false when the hash has neither (it is gone).
func record(key string, vals []any) (rec conversation.Record, ok bool, err error) {
	data, hasData := vals[0].(string)
	v, hasVersion := vals[1].(string)
	if !hasData && !hasVersion {
		return conversation.Record{}, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if !hasData || err != nil || n == 0 {
		return conversation.Record{}, false, fmt.Errorf("hash has data %t and version %q; want both, the version a number", hasData, v)
	}
	return conversation.Record{Key: key, Data: []byte(data), Version: n}, true, nil
}

// Put implements [conversation.Store] with one transaction, one round
// trip: the new hash written under a key of its own, then one script
// (putScript), which compares and renames it over the record. keep becomes the key's TTL, renewed by every Put; 0 leaves it
// without one.
func (s *Store) Put(ctx context.Context, kind conversation.Kind, rec conversation.Record, keep time.Duration) (int64, error) {
	fail := func(err error) (int64, error) {
		return 0, fmt.Errorf("redis: put %s %s: %w", kind, phone.Mask(rec.Key), err)
	}
	rk, err := s.key(kind, rec.Key)
	if err != nil {
		return fail(err)
	}
	var ms int64 // PEXPIRE 0 would delete: round up
	if keep > 0 {
		ms = int64((keep + time.Millisecond - 1) / time.Millisecond)
	}
	tmp := s.prefix + tempKey + strconv.FormatUint(rand.Uint64(), 36)
	// MULTI and EXEC: Redis runs the two commands together or, if the
	// connection drops before EXEC, not at all, so no new hash is ever
	// left behind.
	tx := s.rdb.TxPipeline()
	tx.HSet(ctx, tmp, dataField, rec.Data)
	// Eval, not EvalSha: a transaction cannot fall back on a NOSCRIPT
	// reply, and Redis keeps the compiled script for the same source.
	put := putScript.Eval(ctx, tx, []string{rk, s.prefix + counterKey, tmp}, rec.Version, ms)
	if _, err := tx.Exec(ctx); err != nil && put.Err() == nil {
		return fail(err)
	}
	v, err := put.Int64()
	switch {
	case errors.Is(err, goredis.Nil):
		return fail(conversation.ErrConflict)
	case err != nil:
		return fail(err)
	}
	return v, nil
}

// Delete implements [conversation.Store] with one script (deleteScript).
func (s *Store) Delete(ctx context.Context, kind conversation.Kind, key string, version int64) error {
	fail := func(err error) error {
		return fmt.Errorf("redis: delete %s %s: %w", kind, phone.Mask(key), err)
	}
	rk, err := s.key(kind, key)
	if err != nil {
		return fail(err)
	}
	n, err := deleteScript.Run(ctx, s.rdb, []string{rk}, version).Int()
	switch {
	case err != nil:
		return fail(err)
	case n == 0:
		return fail(conversation.ErrNotFound)
	case n < 0:
		return fail(conversation.ErrConflict)
	}
	return nil
}

// List implements [conversation.Store]: it finds the keys with SCAN, which
// does not hold up the server as KEYS would, and fetches the records in
// pipelines. A record deleted between the two is left out; one written
// after the SCAN passed its place may be.
func (s *Store) List(ctx context.Context, kind conversation.Kind, prefix string) ([]conversation.Record, error) {
	recs, err := s.list(ctx, kind, prefix)
	if err != nil {
		return nil, fmt.Errorf("redis: list %s: %w", kind, err)
	}
	return recs, nil
}

func (s *Store) list(ctx context.Context, kind conversation.Kind, prefix string) ([]conversation.Record, error) {
	base, err := s.key(kind, "")
	if err != nil {
		return nil, err
	}
	// SCAN may return a key more than once.
	seen := map[string]bool{}
	iter := s.rdb.Scan(ctx, 0, redisglob.Prefix(base+prefix), scanCount).Iterator()
	for iter.Next(ctx) {
		seen[iter.Val()] = true
	}
	if err := iter.Err(); err != nil {
		return nil, err
	}
	// The keys share base, so their order is their records' keys' order.
	keys := slices.Sorted(maps.Keys(seen))
	recs := make([]conversation.Record, 0, len(keys))
	for batch := range slices.Chunk(keys, fetchBatch) {
		pipe := s.rdb.Pipeline()
		cmds := make([]*goredis.SliceCmd, len(batch))
		for i, k := range batch {
			cmds[i] = pipe.HMGet(ctx, k, dataField, versionField)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
		for i, cmd := range cmds {
			key := strings.TrimPrefix(batch[i], base)
			rec, ok, err := record(key, cmd.Val())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", phone.Mask(key), err)
			}
			if ok {
				recs = append(recs, rec)
			}
		}
	}
	return recs, nil
}
