package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, newStorage(t))
}

const testPhone = "+14155551234"

func put(tb testing.TB, s *redis.Store, kind conversation.Kind, key, data string, version int64, keep time.Duration) int64 {
	tb.Helper()
	v, err := s.Put(context.Background(), kind, conversation.Record{Key: key, Data: []byte(data), Version: version}, keep)
	if err != nil {
		tb.Fatalf("Put(%s, %q): %v", kind, key, err)
	}
	return v
}

// TestLayout: a record is one hash under <prefix><kind>:<key>, its data
// byte for byte in "d" and its version in "v"; versions come from the
// prefix's counter; keep is the hash's TTL, renewed by every Put, and a
// Put with keep 0 leaves it none. No other key stays, after a write that
// succeeded or one refused.
func TestLayout(t *testing.T) {
	prefix := newPrefix(t)
	s, rdb, ctx := open(t, prefix, nil), rawClient(t), context.Background()
	key := prefix + "conversations:" + testPhone
	data := `{"last_active":"2026-02-24T10:35:00","turns":[]}`

	v1 := put(t, s, conversation.Conversations, testPhone, data, 0, 30*time.Minute)
	got, err := rdb.HGetAll(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["d"] != data || got["v"] != strconv.FormatInt(v1, 10) {
		t.Fatalf("HGETALL %s = %q, want d %q and v %d", key, got, data, v1)
	}
	if n, err := rdb.Get(ctx, prefix+"version").Int64(); err != nil || n != v1 {
		t.Fatalf("counter = %d, %v; want the last version given out, %d", n, err, v1)
	}
	checkTTL := func(want time.Duration) {
		t.Helper()
		ttl, err := rdb.PTTL(ctx, key).Result()
		if err != nil || ttl > want || (want > 0 && ttl <= want-time.Minute) || (want < 0 && ttl != want) {
			t.Fatalf("PTTL %s = %v, %v; want %v", key, ttl, err, want)
		}
	}
	checkTTL(30 * time.Minute)

	if err := rdb.PExpire(ctx, key, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	v2 := put(t, s, conversation.Conversations, testPhone, data, v1, 30*time.Minute)
	checkTTL(30 * time.Minute) // renewed
	put(t, s, conversation.Conversations, testPhone, data, v2, 0)
	checkTTL(-1) // none

	put(t, s, "storetest-a", "k", `1`, 0, 0)
	// A write refused on its version leaves nothing behind either.
	if _, err := s.Put(ctx, conversation.Conversations, conversation.Record{Key: testPhone, Data: []byte(data), Version: v1}, 0); !errors.Is(err, conversation.ErrConflict) {
		t.Fatalf("Put on an old version: err = %v, want ErrConflict", err)
	}
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) != 3 {
		t.Fatalf("keys under the prefix: %q, %v; want the two records and the counter", keys, err)
	}
}

// TestKeepExpires: a record not written again within keep leaves Redis on
// its own, with no sweeper.
func TestKeepExpires(t *testing.T) {
	s, ctx := open(t, newPrefix(t), nil), context.Background()
	put(t, s, conversation.Recent, testPhone, `[]`, 0, 100*time.Millisecond)
	put(t, s, conversation.Recent, "+14155550000", `[]`, 0, 0)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := s.Get(ctx, conversation.Recent, testPhone)
		if errors.Is(err, conversation.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the record is still there 5 s after its 100 ms keep")
		}
	}
	if _, err := s.Get(ctx, conversation.Recent, "+14155550000"); err != nil {
		t.Fatalf("the record kept without a TTL: %v", err)
	}
}

// TestKindWithColon: a kind with ':' could name the keys of another kind
// ("a:b" and "a" with keys "c" and "b:c"), so it is refused and nothing
// is written.
func TestKindWithColon(t *testing.T) {
	prefix := newPrefix(t)
	s, rdb, ctx := open(t, prefix, nil), rawClient(t), context.Background()
	if _, err := s.Put(ctx, "a:b", conversation.Record{Key: "c", Data: []byte(`1`)}, 0); err == nil {
		t.Fatal("Put of kind a:b succeeded")
	}
	if _, err := s.Get(ctx, "a:b", "c"); err == nil || errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Get of kind a:b: err = %v, want the kind refused", err)
	}
	if _, err := s.List(ctx, "a:b", ""); err == nil {
		t.Fatal("List of kind a:b succeeded")
	}
	if err := s.Delete(ctx, "a:b", "c", 0); err == nil || errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Delete of kind a:b: err = %v, want the kind refused", err)
	}
	if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) != 0 {
		t.Fatalf("keys %q written for a refused kind", keys)
	}
}

// TestDriverErrors: what another program left where a record belongs (a
// string, or a hash that is not a record) fails every call with an error
// that names the operation and the kind, wraps Redis's reply, masks the
// phone, and changes nothing.
func TestDriverErrors(t *testing.T) {
	prefix := newPrefix(t)
	s, rdb, ctx := open(t, prefix, nil), rawClient(t), context.Background()
	kind := conversation.Conversations
	key := prefix + string(kind) + ":" + testPhone
	if err := rdb.Set(ctx, key, "not a hash", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	_, getErr := s.Get(ctx, kind, testPhone)
	_, putErr := s.Put(ctx, kind, conversation.Record{Key: testPhone, Data: []byte(`{}`)}, time.Minute)
	delErr := s.Delete(ctx, kind, testPhone, 0)
	_, listErr := s.List(ctx, kind, "")
	for _, tt := range []struct {
		op  string
		err error
	}{{"get", getErr}, {"put", putErr}, {"delete", delErr}, {"list", listErr}} {
		var reply goredis.Error
		switch {
		case tt.err == nil:
			t.Errorf("%s over a string succeeded", tt.op)
		case !strings.HasPrefix(tt.err.Error(), "redis: "+tt.op+" conversations"):
			t.Errorf("%s: error %q does not start with %q", tt.op, tt.err, "redis: "+tt.op+" conversations")
		case !errors.As(tt.err, &reply) || !strings.HasPrefix(reply.Error(), "WRONGTYPE"):
			t.Errorf("%s: error %q does not wrap Redis's WRONGTYPE reply", tt.op, tt.err)
		case strings.Contains(tt.err.Error(), testPhone):
			t.Errorf("%s: error %q shows the phone", tt.op, tt.err)
		}
	}
	if got, _ := rdb.Get(ctx, key).Result(); got != "not a hash" {
		t.Fatalf("a failed write changed the string to %q", got)
	}
	if keys, _ := rdb.Keys(ctx, prefix+"put:*").Result(); len(keys) != 0 {
		t.Fatalf("a failed write left its new hash behind: %q", keys)
	}
	if ttl, _ := rdb.PTTL(ctx, key).Result(); ttl <= 59*time.Minute {
		t.Fatalf("a failed write changed the TTL to %v", ttl)
	}

	// A hash whose version is not one the store writes is no record.
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, key, "d", "{}", "v", "twelve").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, kind, testPhone); err == nil || errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Get of a hash with version \"twelve\": err = %v, want an error", err)
	}
	if _, err := s.List(ctx, kind, ""); err == nil {
		t.Fatal("List over a hash with version \"twelve\" succeeded")
	}
}

// TestListScans lists more records than one SCAN step returns, under a
// prefix with glob characters, next to another prefix's records and
// another kind's, in key order.
func TestListScans(t *testing.T) {
	prefix := newPrefix(t) + "[*?]:"
	other := newPrefix(t)
	s, o, rdb, ctx := open(t, prefix, nil), open(t, other, nil), rawClient(t), context.Background()
	const n = 2500
	pipe := rdb.Pipeline()
	for i := range n { // written backwards, in the layout Put writes
		pipe.HSet(ctx, fmt.Sprintf("%susage:2026-02-24/+1%06d", prefix, n-1-i), "d", `{}`, "v", i+1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	put(t, o, conversation.UsageDays, "2026-02-24/+2", `{}`, 0, 0)
	put(t, s, conversation.Conversations, "2026-02-24/+3", `{}`, 0, 0)
	recs, err := s.List(ctx, conversation.UsageDays, "2026-02-24/")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("List returned %d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if want := fmt.Sprintf("2026-02-24/+1%06d", i); r.Key != want || string(r.Data) != `{}` || r.Version != int64(n-i) {
			t.Fatalf("List[%d] = {%q %q v%d}, want {%q {} v%d}", i, r.Key, r.Data, r.Version, want, n-i)
		}
	}
	if recs, err := o.List(ctx, conversation.UsageDays, ""); err != nil || len(recs) != 1 || recs[0].Key != "2026-02-24/+2" {
		t.Fatalf("the other prefix lists %v, %v; want only 2026-02-24/+2", recs, err)
	}
}

// TestScriptCacheFlushed: after Redis lost its scripts (a restart, SCRIPT
// FLUSH), Put and Delete load them again and run once. It runs on a Redis
// of its own, so as not to flush the scripts of others.
func TestScriptCacheFlushed(t *testing.T) {
	port := freePort(t)
	startServer(t, port)
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	ctx := context.Background()
	var s *redis.Store
	for deadline := time.Now().Add(10 * time.Second); s == nil; time.Sleep(50 * time.Millisecond) {
		var err error
		if s, err = redis.Open(ctx, url, &redis.Options{Logger: quiet}); err != nil && time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	defer s.Close()
	opts, _ := goredis.ParseURL(url)
	rdb := goredis.NewClient(opts)
	defer rdb.Close()
	flush := func() {
		t.Helper()
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	v1 := put(t, s, conversation.Conversations, "+1", `1`, 0, time.Hour)
	flush()
	v2 := put(t, s, conversation.Conversations, "+1", `2`, v1, time.Hour)
	flush()
	put(t, s, conversation.Conversations, "+2", `1`, 0, time.Hour)
	if v2 != v1+1 {
		t.Fatalf("versions %d then %d: a Put after SCRIPT FLUSH ran more than once", v1, v2)
	}
	flush()
	if err := s.Delete(ctx, conversation.Conversations, "+1", v2); err != nil {
		t.Fatalf("Delete after SCRIPT FLUSH: %v", err)
	}
	if r, err := s.Get(ctx, conversation.Conversations, "+2"); err != nil || string(r.Data) != `1` {
		t.Fatalf("Get(+2) = %q, %v", r.Data, err)
	}
}
