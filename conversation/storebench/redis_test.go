package storebench_test

import (
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/internal/redistest"
)

// redisDB is one populated key prefix, shared by the run's benchmarks.
type redisDB struct {
	mem    *conversation.Memory
	store  *redis.Store
	rdb    *goredis.Client // a bare client, for the floors
	prefix string
	data   []byte // a stored conversation's bytes, which the floors move
}

var (
	redisMu  sync.Mutex
	redisDBs = map[int]*redisDB{}
)

// floorKeys is the number of keys that the floors' GETs and SETs pick
// from, each holding the bytes of a whole conversation.
const floorKeys = 1000

// ttl is the lifetime of the populated keys, so that they go away even if
// the clean-up does not run.
const ttl = 2 * time.Hour

// redisFor returns a prefix of people conversations: the first saved
// through the store, the others copies of its key (DUMP and RESTORE), in
// pipelines of a thousand people.
func redisFor(b *testing.B, people int) *redisDB {
	b.Helper()
	url := redistest.URL(b)
	redisMu.Lock()
	defer redisMu.Unlock()
	if d, ok := redisDBs[people]; ok {
		return d
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	rdb := goredis.NewClient(opts)
	prefix := fmt.Sprintf("mombot-bench:%s:", randomText())
	atExit(func() {
		redistest.Unlink(ctx(), rdb, prefix)
		rdb.Close()
	})
	s, err := redis.Open(ctx(), url, &redis.Options{Prefix: prefix, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	atExit(func() { s.Close() })
	mem, err := conversation.New(s, &conversation.Options{Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	fill(b, mem, phone(0))

	start := time.Now()
	keys, err := rdb.Keys(ctx(), prefix+"*"+phone(0)).Result()
	if err != nil || len(keys) != 1 {
		b.Fatalf("keys of the first conversation: %q, %v; want one", keys, err)
	}
	data, err := rdb.HGet(ctx(), keys[0], "d").Bytes()
	if err != nil {
		b.Fatal(err)
	}
	dumps := make([]string, len(keys))
	for i, k := range keys {
		if dumps[i], err = rdb.Dump(ctx(), k).Result(); err != nil {
			b.Fatal(err)
		}
		if err := rdb.PExpire(ctx(), k, ttl).Err(); err != nil {
			b.Fatal(err)
		}
	}
	for lo := 1; lo < people; lo += 1000 {
		pipe := rdb.Pipeline()
		for p := lo; p < min(lo+1000, people); p++ {
			for i, k := range keys {
				pipe.Restore(ctx(), strings.Replace(k, phone(0), phone(p), 1), ttl, dumps[i])
			}
		}
		if _, err := pipe.Exec(ctx()); err != nil {
			b.Fatal(err)
		}
	}
	pipe := rdb.Pipeline()
	for k := range floorKeys {
		pipe.Set(ctx(), fmt.Sprintf("%sfloor:%d", prefix, k), data, ttl)
	}
	if _, err := pipe.Exec(ctx()); err != nil {
		b.Fatal(err)
	}
	b.Logf("redis: populated %d people in %v", people, time.Since(start).Round(time.Millisecond))
	d := &redisDB{mem: mem, store: s, rdb: rdb, prefix: prefix, data: data}
	redisDBs[people] = d
	return d
}

// BenchmarkRedis measures the Redis store against one round trip that
// moves a stored conversation's bytes on the same server: a GET for
// History and the store's Get (one HMGET), a SET for SaveTurn and the
// store's Put (a conditional write by script). A cold SaveTurn makes a Get
// and a Put.
func BenchmarkRedis(b *testing.B) {
	for _, people := range sizes {
		b.Run(fmt.Sprintf("people=%d/op=History", people), func(b *testing.B) {
			d := redisFor(b, people)
			measure(b, func() {
				h, err := d.mem.History(ctx(), phone(mrand.IntN(people)))
				checkHistory(b, h, err)
			}, d.getFloor(b))
		})
		b.Run(fmt.Sprintf("people=%d/op=SaveTurn", people), func(b *testing.B) {
			d := redisFor(b, people)
			var turn []conversation.Message
			measurePrepared(b, func() { turn = nextTurn() }, func() {
				if err := d.mem.SaveTurn(ctx(), phone(mrand.IntN(people)), turn); err != nil {
					b.Fatal(err)
				}
			}, d.setFloor(b))
		})
		b.Run(fmt.Sprintf("people=%d/op=Get", people), func(b *testing.B) {
			d := redisFor(b, people)
			measure(b, func() {
				r, err := d.store.Get(ctx(), conversation.Conversations, phone(mrand.IntN(people)))
				if err != nil || len(r.Data) != len(d.data) {
					b.Fatalf("Get = %d bytes, %v", len(r.Data), err)
				}
			}, d.getFloor(b))
		})
		b.Run(fmt.Sprintf("people=%d/op=Put", people), func(b *testing.B) {
			d := redisFor(b, people)
			var rec conversation.Record
			measurePrepared(b, func() {
				var err error
				if rec, err = d.store.Get(ctx(), conversation.Conversations, phone(mrand.IntN(people))); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if _, err := d.store.Put(ctx(), conversation.Conversations, rec, conversation.DefaultTimeout); err != nil {
					b.Fatal(err)
				}
			}, d.setFloor(b))
		})
	}
}

// getFloor returns the floor of a read: a GET of a conversation's bytes.
func (d *redisDB) getFloor(b *testing.B) func() {
	return func() {
		v, err := d.rdb.Get(ctx(), fmt.Sprintf("%sfloor:%d", d.prefix, mrand.IntN(floorKeys))).Bytes()
		if err != nil || len(v) != len(d.data) {
			b.Fatalf("floor GET: %d bytes, %v", len(v), err)
		}
	}
}

// setFloor returns the floor of a write: a SET of a conversation's bytes.
func (d *redisDB) setFloor(b *testing.B) func() {
	return func() {
		if err := d.rdb.Set(ctx(), fmt.Sprintf("%sfloor:%d", d.prefix, mrand.IntN(floorKeys)), d.data, ttl).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
