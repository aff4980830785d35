package whatsapp_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation/redis"
	deliveryredis "github.com/mombot/mombot/delivery/redis"
	"github.com/mombot/mombot/internal/redistest"
	"github.com/mombot/mombot/whatsapp"
	goredis "github.com/redis/go-redis/v9"
)

// openRedis opens a store on MOMBOT_TEST_REDIS_URL under a key prefix of
// the test's own, whose keys are deleted when the test ends, and returns it
// with the prefix and a raw client; it skips the test without the variable.
func openRedis(t *testing.T, logger *slog.Logger) (*redis.Store, string, *goredis.Client) {
	t.Helper()
	url, prefix, rdb := redistest.URL(t), redistest.Prefix(t), redistest.Client(t)
	s, err := redis.Open(context.Background(), url, &redis.Options{Prefix: prefix, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, prefix, rdb
}

// TestRedisLockStolenStopsTheDrain: with the Redis queue and locker, a
// drain whose lock another takes does not send the reply in hand and stops,
// leaving both messages queued in Redis; once the lock is free again both
// are answered, each once.
func TestRedisLockStolenStopsTheDrain(t *testing.T) {
	var storeLogs syncBuffer
	store, prefix, rdb := openRedis(t, slog.New(slog.NewTextHandler(&storeLogs, nil)))
	q, err := deliveryredis.NewInbox(store.Client(), &deliveryredis.InboxOptions{Prefix: store.Prefix(), QueueTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	locker, err := deliveryredis.NewLocker(store.Client(), &deliveryredis.LockerOptions{Prefix: store.Prefix(), TTL: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&storeLogs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *setup) { c.Inbox, c.Locker = q, locker })
	started, release := make(chan string, 1), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	h.resp.respond = func(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
		if in.Text == "m1" {
			started <- in.Text
			<-release
		}
		return "echo: " + in.Text, nil
	}
	ctx := context.Background()
	lockKey, queueKey := prefix+"lock:"+sheena, prefix+"queue:"+sheena
	if code := h.post(text(sheenaWaID, "wamid.r1", "m1")); code != http.StatusOK {
		t.Fatalf("delivery: %d", code)
	}
	<-started
	h.post(text(sheenaWaID, "wamid.r2", "m2"))

	// Another replica takes the lock, as if this one's had expired.
	if err := rdb.Set(ctx, lockKey, "thief", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(storeLogs.String(), "lock expired while held"); {
		if time.Now().After(deadline) {
			t.Fatalf("the stolen lock was not noticed: %s", storeLogs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	once.Do(func() { close(release) })
	h.waitLog("sender lock lost before the reply was sent")
	if got := h.resp.texts(); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("with its lock stolen, the drain went on to answer %q", got)
	}
	if n := h.graph.Attempts(); n != 0 {
		t.Fatalf("sent %q under a stolen lock", h.bodies())
	}
	items, err := rdb.LRange(ctx, queueKey, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || !strings.Contains(items[0], "wamid.r1") || !strings.Contains(items[1], "wamid.r2") {
		t.Fatalf("queued in Redis: %q, want both messages (the first not removed by a holder that lost its lock)", items)
	}

	// The thief is done: the next drain takes over.
	if err := rdb.Del(ctx, lockKey).Err(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := h.graph.WaitSent(wctx, 2); err != nil {
		t.Fatalf("m2 was not answered once the lock was free: %v", err)
	}
	h.shutdown()
	if got, want := h.bodies(), []string{"echo: m1", "echo: m2"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
	// As in TestLockLostStopsTheDrain, m1's reply may have come back
	// before the loss was seen, and then waits unsent for the next holder.
	if got := h.resp.texts(); !slices.Equal(got, []string{"m1", "m1", "m2"}) && !slices.Equal(got, []string{"m1", "m2"}) {
		t.Errorf("responder asked %q, want m1 (once more by the next holder, unless its reply was kept), then m2", got)
	}
	if n, _ := rdb.LLen(ctx, queueKey).Result(); n != 0 {
		t.Errorf("%d messages still queued in Redis", n)
	}
}
