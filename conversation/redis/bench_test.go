package redis_test

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/storetest"
)

// benchSizes are the numbers of phones, each with a full conversation of
// benchTurns turns, that the benchmarks run against.
var benchSizes = []int{100, 10_000, 100_000}

const benchTurns = conversation.DefaultMaxTurns

// Populated prefixes are kept for the whole run, so that -count and the two
// benchmarks pay for populating each size once; TestMain removes them. The
// benchmarks leave every conversation at benchTurns turns.
var (
	benchMu       sync.Mutex
	benchPrefixes = map[int]string{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if len(benchPrefixes) > 0 {
		opts, err := goredis.ParseURL(os.Getenv("MOMBOT_TEST_REDIS_URL"))
		if err == nil {
			rdb := goredis.NewClient(opts)
			for _, prefix := range benchPrefixes {
				deleteKeys(nopTB{}, rdb, prefix)
			}
			rdb.Close()
		}
	}
	os.Exit(code)
}

// nopTB lets deleteKeys run outside a test; it only reports errors.
type nopTB struct{ testing.TB }

func (nopTB) Helper()                           {}
func (nopTB) Errorf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func benchPhone(i int) string { return fmt.Sprintf("+1%010d", i) }

// benchPrefix returns the prefix of phones conversations of benchTurns
// turns each, last active at storetest.Start, populating them on first use
// with pipelines of a thousand phones. The turns' head lines have no
// checksums, as for turns another program wrote, so History here takes
// the path that decodes and validates them; conversation/storebench
// measures turns this version saved.
func benchPrefix(b *testing.B, phones int) string {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if prefix, ok := benchPrefixes[phones]; ok {
		return prefix
	}
	prefix := fmt.Sprintf("mombot-bench:%s:", rand.Text()[:12])
	benchPrefixes[phones] = prefix // cleaned up even if populating fails
	rdb := rawClient(b)
	ctx := context.Background()
	// The head (see turns.go): the last activity and number of turns, and
	// a line per turn,
	// its field "m<i>" without a checksum ("-") or tool ids; then the
	// turns' fields.
	head := fmt.Sprintf("3 %d %d\n", storetest.Start.UnixMicro(), benchTurns)
	data := []any{"h", ""}
	for i := range benchTurns {
		t := turn(fmt.Sprintf("question %d: what should we cook tonight?", i),
			fmt.Sprintf("answer %d: lemon chicken with rice takes about 30 minutes.", i))
		js, err := t.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		head += fmt.Sprintf("m%d:-\n", i+1)
		data = append(data, fmt.Sprintf("m%d", i+1), js)
	}
	data[1] = head
	start := time.Now()
	// An hour's TTL, so that the keys go away even if cleanup does not run.
	const ttl = time.Hour
	for lo := 0; lo < phones; lo += 1000 {
		pipe := rdb.Pipeline()
		for p := lo; p < min(lo+1000, phones); p++ {
			phone := benchPhone(p)
			pipe.HSet(ctx, prefix+"chat:"+phone, data...)
			pipe.Expire(ctx, prefix+"chat:"+phone, ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("populated %d phones x %d turns in %v", phones, benchTurns, time.Since(start).Round(time.Millisecond))
	return prefix
}

// benchMemory opens the store of phones conversations behind a Memory whose
// clock stands a minute after their last activity.
func benchMemory(b *testing.B, phones int) *conversation.Memory {
	b.Helper()
	prefix := benchPrefix(b, phones)
	s, err := redis.Open(context.Background(), testURL(b), &redis.Options{Prefix: prefix, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	now := storetest.Start.Add(time.Minute)
	mem, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	return mem
}

// BenchmarkSaveTurn saves one text turn for a random phone of a full
// conversation: one MULTI/EXEC of the HSET of the turn, the script that
// writes the head, drops the oldest and renews the TTL, and a PEXPIRE NX.
func BenchmarkSaveTurn(b *testing.B) {
	testURL(b)
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("phones=%d", n), func(b *testing.B) {
			mem := benchMemory(b, n)
			ctx := context.Background()
			msgs := storetest.TextTurn("what should we cook tonight?", "Lemon chicken with rice: about 30 minutes.")
			for b.Loop() {
				if err := mem.SaveTurn(ctx, benchPhone(mrand.IntN(n)), msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHistory loads the history of a random phone: 10 turns, 20
// messages, in one HGETALL.
func BenchmarkHistory(b *testing.B) {
	testURL(b)
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("phones=%d", n), func(b *testing.B) {
			mem := benchMemory(b, n)
			ctx := context.Background()
			for b.Loop() {
				h, err := mem.History(ctx, benchPhone(mrand.IntN(n)))
				if err != nil {
					b.Fatal(err)
				}
				if len(h) != 2*benchTurns {
					b.Fatalf("history of %d messages, want %d", len(h), 2*benchTurns)
				}
			}
		})
	}
}
