package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/delivery/deliverytest"
	"github.com/mombot/mombot/delivery/redis"
	"github.com/mombot/mombot/internal/redistest"
)

func newInbox(t *testing.T, prefix string, ttl time.Duration) *redis.Inbox {
	t.Helper()
	s := open(t, prefix, nil)
	in, err := redis.NewInbox(s.Client(), &redis.InboxOptions{Prefix: s.Prefix(), QueueTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestInboxConformance(t *testing.T) {
	deliverytest.Run(t, func(t *testing.T) delivery.Inbox { return newInbox(t, redistest.Prefix(t), time.Hour) })
}

func TestInboxDurable(t *testing.T) {
	deliverytest.RunDurable(t, func(t *testing.T) (delivery.Inbox, func() delivery.Inbox) {
		prefix := redistest.Prefix(t)
		return newInbox(t, prefix, time.Hour), func() delivery.Inbox { return newInbox(t, prefix, time.Hour) }
	})
}

// TestInboxKeys: the queue lives QueueTTL after its last push, a message
// waiting is marked for as long, and a handled id for delivery.HandledFor
// (seven days).
func TestInboxKeys(t *testing.T) {
	prefix := redistest.Prefix(t)
	in := newInbox(t, prefix, time.Hour)
	rdb := redistest.Client(t)
	ctx := context.Background()
	deliverytest.Push(t, in, deliverytest.Msg("+1", "wamid.A"))
	deliverytest.Sending(t, in, "+1", "wamid.A")
	for _, k := range []string{prefix + "queue:+1", prefix + "waiting:wamid:wamid.A", prefix + "sending:+1"} {
		if ttl, _ := rdb.PTTL(ctx, k).Result(); ttl <= 59*time.Minute || ttl > time.Hour {
			t.Errorf("TTL of %s = %v, want an hour", k, ttl)
		}
	}
	deliverytest.Done(t, in, "+1", "wamid.A")
	if n, _ := rdb.Exists(ctx, prefix+"queue:+1", prefix+"waiting:wamid:wamid.A", prefix+"sending:+1").Result(); n != 0 {
		t.Errorf("%d of the queue, the waiting and the sending marks left after Done", n)
	}
	if ttl, _ := rdb.PTTL(ctx, prefix+"seen:wamid:wamid.A").Result(); ttl <= delivery.HandledFor-time.Minute || ttl > delivery.HandledFor {
		t.Errorf("TTL of the handled mark = %v, want %v", ttl, delivery.HandledFor)
	}
	if _, err := redis.NewInbox(rdb, &redis.InboxOptions{QueueTTL: -time.Second}); err == nil {
		t.Error("NewInbox with a negative TTL succeeded")
	}
}

// TestInboxQueueTTLFromMaxAge: without a QueueTTL, a queue outlives the
// age after which its messages are skipped by an hour, and never lives
// less than DefaultQueueTTL; a QueueTTL given wins over MaxAge.
func TestInboxQueueTTLFromMaxAge(t *testing.T) {
	tests := []struct {
		name             string
		maxAge, queueTTL time.Duration
		want             time.Duration
	}{
		{"the defaults", 0, 0, redis.DefaultQueueTTL},
		{"a shorter age than a day", 2 * time.Hour, 0, redis.DefaultQueueTTL},
		{"two days", 48 * time.Hour, 0, 49 * time.Hour},
		{"a QueueTTL given", 48 * time.Hour, time.Hour, time.Hour},
	}
	rdb := redistest.Client(t)
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			in, err := redis.NewInbox(rdb, &redis.InboxOptions{Prefix: prefix, MaxAge: tt.maxAge, QueueTTL: tt.queueTTL})
			if err != nil {
				t.Fatal(err)
			}
			deliverytest.Push(t, in, deliverytest.Msg("+1", "wamid.A"))
			if ttl, _ := rdb.PTTL(ctx, prefix+"queue:+1").Result(); ttl <= tt.want-time.Minute || ttl > tt.want {
				t.Errorf("TTL of the queue = %v, want %v", ttl, tt.want)
			}
		})
	}
}

// TestInboxShared pushes from two clients, as two replicas would, and
// drains from both, each peeking and calling Done under a lock: every
// message once, in the order pushed.
func TestInboxShared(t *testing.T) {
	prefix := redistest.Prefix(t)
	ins := []*redis.Inbox{newInbox(t, prefix, time.Hour), newInbox(t, prefix, time.Hour)}
	const key = "+14155551234"
	for i := range 6 {
		deliverytest.Push(t, ins[i%2], deliverytest.Msg(key, fmt.Sprintf("m%d", i)))
	}
	if !deliverytest.Dup(t, ins[1], deliverytest.Msg(key, "m0")) {
		t.Errorf("a push on one replica of a message the other holds: kept, want a duplicate")
	}
	var mu sync.Mutex // the lock a drain holds
	var got []string
	var wg sync.WaitGroup
	for _, in := range ins {
		wg.Go(func() {
			for {
				mu.Lock()
				m, ok := deliverytest.Peek(t, in, key)
				if !ok {
					mu.Unlock()
					return
				}
				got = append(got, m.ID)
				deliverytest.Done(t, in, key, m.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if fmt.Sprint(got) != "[m0 m1 m2 m3 m4 m5]" {
		t.Errorf("drained %v, want each once in order", got)
	}
}

// TestInboxReleasedData: the keys mombot v0.1.0 wrote (its inbox
// fixture's messages in their queues with their waiting marks, and the
// handled mark of its handled id) are read as they were; an item that is
// not a message at all is given an id of its own, so that Done removes it.
func TestInboxReleasedData(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "v0.1.0", "whatsapp-inbox.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v010 struct {
		Queues  map[string][]json.RawMessage
		Handled map[string]int64
	}
	if err := json.Unmarshal(data, &v010); err != nil {
		t.Fatal(err)
	}
	prefix := redistest.Prefix(t)
	in := newInbox(t, prefix, time.Hour)
	rdb := redistest.Client(t)
	ctx := context.Background()
	for key, items := range v010.Queues {
		for _, item := range items {
			var m struct{ ID string }
			json.Unmarshal(item, &m)
			rdb.RPush(ctx, prefix+"queue:"+key, []byte(item))
			rdb.Set(ctx, prefix+"waiting:wamid:"+m.ID, "1", time.Hour)
		}
	}
	for id := range v010.Handled {
		rdb.Set(ctx, prefix+"seen:wamid:"+id, "1", time.Hour)
	}
	rdb.RPush(ctx, prefix+"queue:+14155550102", "garbage")
	if !deliverytest.Dup(t, in, deliverytest.Msg("+14155550101", "wamid.A0")) {
		t.Error("the id v0.1.0 marked handled: kept, want a duplicate")
	}
	if !deliverytest.Dup(t, in, deliverytest.Msg("+14155550101", "wamid.A2")) {
		t.Error("a message v0.1.0 queued: kept again, want a duplicate")
	}
	for key, want := range map[string][]string{"+14155550101": {"wamid.A1", "wamid.A2"}, "+14155550102": {"wamid.B1", ""}} {
		for _, id := range want {
			m, ok := deliverytest.Peek(t, in, key)
			if !ok || id != "" && m.ID != id || id == "" && m.ID == "" {
				t.Fatalf("head of %s = %+v, %v; want %q", key, m, ok, id)
			}
			deliverytest.Done(t, in, key, m.ID)
		}
	}
	if k := deliverytest.Keys(t, in); len(k) != 0 {
		t.Errorf("Keys = %q once every message is done", k)
	}
}

// TestInboxErase: Erase leaves no key of the sender's under the prefix: not
// its queue, the waiting marks of its messages, the handled marks of its
// ids or their record; another sender's stay.
func TestInboxErase(t *testing.T) {
	prefix := redistest.Prefix(t)
	in := newInbox(t, prefix, time.Hour)
	rdb := redistest.Client(t)
	ctx := context.Background()
	deliverytest.Done(t, in, "+1", "wamid.A0")
	deliverytest.Done(t, in, "+2", "wamid.B0")
	deliverytest.Push(t, in, deliverytest.Msg("+1", "wamid.A1"))
	deliverytest.Push(t, in, deliverytest.Msg("+2", "wamid.B1"))
	if ttl, _ := rdb.PTTL(ctx, prefix+"handled:+1").Result(); ttl <= delivery.HandledFor-time.Minute || ttl > delivery.HandledFor {
		t.Errorf("TTL of the record of handled ids = %v, want %v", ttl, delivery.HandledFor)
	}
	deliverytest.Erase(t, in, "+1")
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	want := []string{prefix + "handled:+2", prefix + "queue:+2", prefix + "seen:wamid:wamid.B0", prefix + "waiting:wamid:wamid.B1"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys after Erase(+1) = %q, want %q", keys, want)
	}
}
