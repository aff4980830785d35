package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/pgtest"
)

// redisStoreURL returns a redis:// store URL on MOMBOT_TEST_REDIS_URL with
// a key prefix of the test's own, whose keys (conversations, locks, seen
// message ids) are deleted when the test ends; it skips the test when the
// variable is unset.
func redisStoreURL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv("MOMBOT_TEST_REDIS_URL")
	if base == "" {
		tb.Skip("MOMBOT_TEST_REDIS_URL is not set: set it to a Redis the tests may write to, such as redis://127.0.0.1:6379/0, to run the tests of replicas sharing a Redis")
	}
	return prefixedRedisURL(tb, base)
}

// prefixedRedisURL returns base with a fresh ?prefix= and deletes the keys
// under that prefix when the test ends.
func prefixedRedisURL(tb testing.TB, base string) string {
	tb.Helper()
	prefix := fmt.Sprintf("mombot-e2e:%s:", rand.Text()[:12])
	opts, err := goredis.ParseURL(base)
	if err != nil {
		tb.Fatalf("MOMBOT_TEST_REDIS_URL: %v", err)
	}
	tb.Cleanup(func() {
		rdb := goredis.NewClient(opts)
		defer rdb.Close()
		ctx := context.Background()
		keys, err := rdb.Keys(ctx, prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			err = rdb.Unlink(ctx, keys...).Err()
		}
		if err != nil {
			tb.Logf("cleanup of the keys under %s: %v", prefix, err)
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "prefix=" + prefix
}

// storedHistory returns phone's messages in the store at url, as History
// gives them.
func storedHistory(tb testing.TB, url, phone string) []conversation.Message {
	tb.Helper()
	e := &env{getenv: func(string) string { return "" }, log: newLogger(io.Discard, "")}
	s, err := openStore(context.Background(), url, e)
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	mem, err := conversation.New(s, &conversation.Options{MaxTurns: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	h, err := mem.History(context.Background(), phone)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// replicaLoad is a burst of webhooks from many senders, each sender's sent
// one after another, each delivery to a replica picked at random, some
// delivered a second time (to a replica picked at random too).
type replicaLoad struct {
	Senders   int
	PerSender int
	// Twice is the share of messages delivered a second time.
	Twice float64
	Seed  uint64
}

// phone returns sender i's phone number.
func (l replicaLoad) phone(i int) string { return fmt.Sprintf("+1555%07d", 100+i) }

// family names every sender, for the configuration file.
func (l replicaLoad) family() map[string]string {
	fam := map[string]string{}
	for i := range l.Senders {
		fam[l.phone(i)] = fmt.Sprintf("Sender %d", i)
	}
	return fam
}

// key is the marker of sender i's k-th message.
func (l replicaLoad) key(run string, i, k int) string { return fmt.Sprintf("%s-%d-%d", run, i, k) }

// deliver posts the load's webhooks to procs and returns the number of
// deliveries. run makes its message ids and markers unique.
func (l replicaLoad) deliver(t testing.TB, run string, procs []*servedProc) int {
	t.Helper()
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		deliveries int
	)
	for i := range l.Senders {
		rng := mrand.New(mrand.NewPCG(l.Seed, uint64(i)))
		wg.Go(func() {
			n := 0
			for k := range l.PerSender {
				key := l.key(run, i, k)
				body := webhookPayload(inMessage{From: strings.TrimPrefix(l.phone(i), "+"), ID: "wamid.e2e." + key, Text: "[k=" + key + "] hello"})
				times := 1
				if rng.Float64() < l.Twice {
					times = 2
				}
				for range times {
					if code := procs[rng.IntN(len(procs))].deliver(body); code != 200 {
						t.Errorf("delivery of %s: %d", key, code)
					}
					n++
				}
			}
			mu.Lock()
			deliveries += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return deliveries
}

// check checks, once every replica has stopped, that each message was
// answered exactly once, to its sender, and that the store holds every
// sender's turns in the order they were sent.
func (l replicaLoad) check(t testing.TB, f *serveFixture, run string) {
	t.Helper()
	answered := map[string]int{}
	for _, m := range f.graph.Sent() {
		key, ok := strings.CutPrefix(m.Body, "re ")
		if !ok {
			t.Errorf("unexpected reply %q to %s", m.Body, m.To)
			continue
		}
		if !strings.HasPrefix(key, run+"-") {
			continue // another run's
		}
		answered[key]++
		var i, k int
		if _, err := fmt.Sscanf(strings.TrimPrefix(key, run+"-"), "%d-%d", &i, &k); err != nil || m.To != strings.TrimPrefix(l.phone(i), "+") {
			t.Errorf("the reply to %s went to %s", key, m.To)
		}
	}
	wrong := 0
	for i := range l.Senders {
		var want []string
		for k := range l.PerSender {
			key := l.key(run, i, k)
			want = append(want, key)
			if n := answered[key]; n != 1 && wrong < 10 {
				wrong++
				t.Errorf("message %s answered %d times, want once", key, n)
			}
		}
		var stored []string
		for _, m := range storedHistory(t, f.store, l.phone(i)) {
			if m.Role == "user" {
				if k := markerRE.FindSubmatch(m.Content); k != nil {
					stored = append(stored, string(k[1]))
				}
			}
		}
		if !slices.Equal(stored, want) && wrong < 10 {
			wrong++
			t.Errorf("%s's stored turns: %q, want %q", l.phone(i), stored, want)
		}
	}
}

// TestServeReplicas runs two mombot serve processes on one Redis and posts
// interleaved webhooks for the same and for different phones to either at
// random, some twice: no turn is lost, each message is answered once, and
// each sender's turns are stored in the order sent.
func TestServeReplicas(t *testing.T) {
	testServeReplicas(t, redisStoreURL(t))
}

// TestServeReplicasPostgres is TestServeReplicas on one PostgreSQL
// database: the conversations, the inbox and the sender locks in one
// schema (delivery/postgres), where every message is recorded handled.
func TestServeReplicasPostgres(t *testing.T) {
	schema := pgtest.Name(t)
	n := testServeReplicas(t, withQuery(t, pgtest.URL(t), "schema", schema))
	var handled int
	err := pgtest.Conn(t).QueryRow(context.Background(), `SELECT count(*) FROM `+schema+`.inbox WHERE handled_at IS NOT NULL`).Scan(&handled)
	if err != nil || handled != n {
		t.Errorf("%d messages recorded handled in the PostgreSQL inbox (%v), want %d", handled, err, n)
	}
}

// testServeReplicas runs the replicas' test on the store and returns how
// many messages were sent.
func testServeReplicas(t *testing.T, store string) int {
	load := replicaLoad{Senders: 8, PerSender: 6, Twice: 0.3, Seed: uint64(time.Now().UnixNano())}
	t.Logf("seed %d", load.Seed)
	f := newServeFixture(t, store, load.family())
	f.args = []string{"--max-turns", fmt.Sprint(load.PerSender)}
	// Long enough that one sender's messages wait for each other, across
	// the replicas too.
	echoMarkers(f.claude, 50*time.Millisecond)
	procs := []*servedProc{f.start(), f.start()}
	run := rand.Text()[:8]
	n := load.deliver(t, run, procs)
	waitSent(t, f.graph, load.Senders*load.PerSender, 60*time.Second)
	for _, p := range procs {
		p.stop()
	}
	t.Logf("%d deliveries of %d messages", n, load.Senders*load.PerSender)
	load.check(t, f, run)
	return load.Senders * load.PerSender
}
