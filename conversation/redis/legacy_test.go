package redis_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/storetest"
)

// legacyTurn is a turn as the older layout (format 1) kept it: its element
// in the turns list and its entry in the ids list.
type legacyTurn struct {
	turn        conversation.Turn
	elem, entry string
}

// newLegacyTurn returns tr as the older layout stored it: behind a header
// member of the checksum and tool ids, or, headerless, as its JSON alone,
// as versions before that wrote it.
func newLegacyTurn(tb testing.TB, tr conversation.Turn, headerless bool) legacyTurn {
	tb.Helper()
	data, err := tr.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	fields := []string{strconv.FormatUint(uint64(conversation.Checksum(data)), 16)}
	for _, id := range tr.ToolUseIDs() {
		fields = append(fields, hex.EncodeToString([]byte(id)))
	}
	if headerless {
		fields[0] = "-"
		return legacyTurn{turn: tr, elem: string(data), entry: strings.Join(fields, " ")}
	}
	entry := strings.Join(fields, " ")
	return legacyTurn{turn: tr, elem: `{"_mombot":"1 ` + entry + `",` + string(data[1:]), entry: entry}
}

// writeLegacy stores turns for phone under prefix in the older layout,
// last active at last, as the older version's save left them.
func writeLegacy(tb testing.TB, rdb *goredis.Client, prefix, phone string, last time.Time, turns []legacyTurn) {
	tb.Helper()
	ctx := context.Background()
	pipe := rdb.TxPipeline()
	pipe.Set(ctx, prefix+"last:"+phone, last.UnixMicro(), time.Hour)
	for _, lt := range turns {
		pipe.RPush(ctx, prefix+"turns:"+phone, lt.elem)
		pipe.RPush(ctx, prefix+"ids:"+phone, lt.entry)
	}
	pipe.Expire(ctx, prefix+"turns:"+phone, time.Hour)
	pipe.Expire(ctx, prefix+"ids:"+phone, time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatal(err)
	}
}

// legacyTurns returns n tool turns in the older layout, every third one
// headerless, with tool ids toolu_<label><i>.
func legacyTurns(tb testing.TB, label string, n int) []legacyTurn {
	out := make([]legacyTurn, n)
	for i := range out {
		tr := conversation.Turn{Messages: storetest.ToolTurn(fmt.Sprint(label, i), fmt.Sprint("toolu_", label, i), "found", "here")}
		out[i] = newLegacyTurn(tb, tr, i%3 == 1)
	}
	return out
}

// sameTurns fails unless got holds want's turns, byte for byte as stored.
func sameTurns(tb testing.TB, got []conversation.Turn, want []conversation.Turn) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%d turns, want %d", len(got), len(want))
	}
	for i := range got {
		g, err := got[i].MarshalJSON()
		if err != nil {
			tb.Fatal(err)
		}
		w, err := want[i].MarshalJSON()
		if err != nil {
			tb.Fatal(err)
		}
		if string(g) != string(w) {
			tb.Fatalf("turn %d = %s, want %s", i, g, w)
		}
	}
}

func turnsOf(lts []legacyTurn) []conversation.Turn {
	out := make([]conversation.Turn, len(lts))
	for i, lt := range lts {
		out[i] = lt.turn
	}
	return out
}

// TestLegacyRead: a conversation that an older version left in its three
// keys is loaded, listed, expired and deleted as it is, without a write.
func TestLegacyRead(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	last := storetest.Start
	turns := legacyTurns(t, "a", 3)
	writeLegacy(t, rdb, prefix, phone, last, turns)

	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if !c.LastActive.Equal(last) {
		t.Fatalf("last active %v, want %v", c.LastActive, last)
	}
	sameTurns(t, c.Turns, turnsOf(turns))
	mem, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return last.Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	h, err := mem.History(ctx, phone)
	if err != nil || len(h) != 12 {
		t.Fatalf("History = %d messages, %v; want 12", len(h), err)
	}
	sums, err := s.List(ctx)
	if err != nil || len(sums) != 1 || sums[0].Phone != phone || sums[0].Turns != 3 || !sums[0].LastActive.Equal(last) {
		t.Fatalf("List = %+v, %v; want %s with 3 turns at %v", sums, err, phone, last)
	}
	if n, _ := rdb.Exists(ctx, prefix+"chat:"+phone).Result(); n != 0 {
		t.Fatal("a load wrote the conversation's list")
	}

	// Expire keeps a conversation newer than the cutoff and deletes it
	// at the cutoff.
	if err := s.Expire(ctx, phone, last.Add(-time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, phone); err != nil {
		t.Fatalf("Expire before the last activity deleted the conversation: %v", err)
	}
	if err := s.Expire(ctx, phone, last); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, phone); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Load after Expire: err = %v, want ErrNotFound", err)
	}
	if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) != 0 {
		t.Fatalf("keys left after Expire: %q", keys)
	}

	writeLegacy(t, rdb, prefix, phone, last, turns)
	if err := s.Delete(ctx, phone); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, phone); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("a second Delete: err = %v, want ErrNotFound", err)
	}
	if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) != 0 {
		t.Fatalf("keys left after Delete: %q", keys)
	}
}

// TestLegacyMovedBySave: the first save after the upgrade moves the turns
// that stay into the list, byte for byte, deletes the older keys, and
// checks the new turn's tool ids against the moved turns, with or
// without their header.
func TestLegacyMovedBySave(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	now := storetest.Start
	turns := legacyTurns(t, "a", lim.MaxTurns) // full: the save drops a0
	writeLegacy(t, rdb, prefix, phone, now, turns)

	for _, id := range []string{"toolu_a1", "toolu_a2"} { // headerless, with header
		tr := conversation.Turn{Messages: storetest.ToolTurn("again", id, "r", "ok")}
		if err := s.Append(ctx, phone, tr, now.Add(time.Minute), lim); !errors.Is(err, conversation.ErrInvalidTurn) {
			t.Fatalf("id %s of a turn that stays reused: Append err = %v, want ErrInvalidTurn", id, err)
		}
	}
	if n, _ := rdb.Exists(ctx, prefix+"chat:"+phone).Result(); n != 0 {
		t.Fatal("a refused save moved the conversation")
	}
	// The oldest turn is dropped by this save, so its id is free.
	next := conversation.Turn{Messages: storetest.ToolTurn("next", "toolu_a0", "r", "ok")}
	if err := s.Append(ctx, phone, next, now.Add(time.Minute), lim); err != nil {
		t.Fatal(err)
	}
	keys, _ := rdb.Keys(ctx, prefix+"*").Result()
	if want := prefix + "chat:" + phone; len(keys) != 1 || keys[0] != want {
		t.Fatalf("keys after the save = %q, want [%q]", keys, want)
	}
	if ttl, _ := rdb.PTTL(ctx, keys[0]).Result(); ttl <= lim.Timeout-time.Minute || ttl > lim.Timeout+time.Second {
		t.Fatalf("TTL of the list = %v, want the timeout", ttl)
	}
	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if !c.LastActive.Equal(now.Add(time.Minute)) {
		t.Fatalf("last active %v, want the save's", c.LastActive)
	}
	sameTurns(t, c.Turns, append(turnsOf(turns[1:]), next))

	// The moved turns' ids are checked by the saves that follow too, and
	// leave as the cap drops their turns.
	for i, id := range []string{"toolu_b0", "toolu_b1"} {
		tr := conversation.Turn{Messages: storetest.ToolTurn("b", id, "r", "ok")}
		if err := s.Append(ctx, phone, tr, now.Add(time.Minute), lim); err != nil {
			t.Fatalf("save %d after the move: %v", i, err)
		}
	}
	// The next save keeps a4 to a9: a4 (headerless) and a5 (with its
	// header) are in use, a3 leaves with this save.
	for _, id := range []string{"toolu_a4", "toolu_a5"} {
		tr := conversation.Turn{Messages: storetest.ToolTurn("again", id, "r", "ok")}
		if err := s.Append(ctx, phone, tr, now.Add(time.Minute), lim); !errors.Is(err, conversation.ErrInvalidTurn) {
			t.Fatalf("id %s of a moved turn that stays: Append err = %v, want ErrInvalidTurn", id, err)
		}
	}
	tr := conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_a3", "r", "ok")}
	if err := s.Append(ctx, phone, tr, now.Add(time.Minute), lim); err != nil {
		t.Fatalf("id toolu_a3 of the turn the save drops: %v", err)
	}
}

// TestLegacyExpiredBySave: a save after the older layout's conversation
// expired starts anew and deletes the older keys.
func TestLegacyExpiredBySave(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	writeLegacy(t, rdb, prefix, phone, storetest.Start, legacyTurns(t, "a", 2))
	later := storetest.Start.Add(lim.Timeout + time.Second)
	tr := conversation.Turn{Messages: storetest.ToolTurn("new", "toolu_a0", "r", "ok")}
	if err := s.Append(ctx, phone, tr, later, lim); err != nil {
		t.Fatal(err)
	}
	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	sameTurns(t, c.Turns, []conversation.Turn{tr})
	if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) != 1 {
		t.Fatalf("keys after the save = %q, want only the list", keys)
	}
}

// TestLegacyReplaced: Replace keeps an older layout's conversation that is
// newer, and replaces an older one, deleting its keys.
func TestLegacyReplaced(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	writeLegacy(t, rdb, prefix, phone, storetest.Start, legacyTurns(t, "a", 2))
	c := conversation.Conversation{Phone: phone, LastActive: storetest.Start.Add(-time.Second), Turns: []conversation.Turn{turn("copy", "ok")}}
	if ok, err := s.Replace(ctx, c, time.Hour); ok || err != nil {
		t.Fatalf("Replace over a newer conversation = %v, %v; want false", ok, err)
	}
	c.LastActive = storetest.Start.Add(time.Second)
	if ok, err := s.Replace(ctx, c, time.Hour); !ok || err != nil {
		t.Fatalf("Replace over an older conversation = %v, %v; want true", ok, err)
	}
	got, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	sameTurns(t, got.Turns, c.Turns)
	if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) != 1 {
		t.Fatalf("keys after Replace = %q, want only the list", keys)
	}
}

// TestRefusedTurnNotInConversation: a turn refused for a reused tool id is
// written into a field of its own and deleted by the same transaction: no
// load, list or save sees it.
func TestRefusedTurnNotInConversation(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "chat:" + phone
	now := storetest.Start
	first := conversation.Turn{Messages: storetest.ToolTurn("one", "toolu_1", "r", "ok")}
	if err := s.Append(ctx, phone, first, now, lim); err != nil {
		t.Fatal(err)
	}
	again := conversation.Turn{Messages: storetest.ToolTurn("two", "toolu_1", "r", "ok")}
	if err := s.Append(ctx, phone, again, now.Add(time.Minute), lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("Append err = %v, want ErrInvalidTurn", err)
	}
	if _, _, _, n := stored(t, rdb, key); n != 2 {
		t.Fatalf("%d fields after a refused save, want 2: the head and the turn", n)
	}
	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if !c.LastActive.Equal(now) {
		t.Fatalf("last active %v after a refused save, want %v", c.LastActive, now)
	}
	sameTurns(t, c.Turns, []conversation.Turn{first})
	if sums, err := s.List(ctx); err != nil || len(sums) != 1 || sums[0].Turns != 1 {
		t.Fatalf("List = %+v, %v; want 1 turn", sums, err)
	}
	second := conversation.Turn{Messages: storetest.ToolTurn("two", "toolu_2", "r", "ok")}
	if err := s.Append(ctx, phone, second, now.Add(time.Minute), lim); err != nil {
		t.Fatal(err)
	}
	_, _, values, n := stored(t, rdb, key)
	want := make([]string, 2)
	for i, tr := range []conversation.Turn{first, second} {
		b, _ := tr.MarshalJSON()
		want[i] = string(b)
	}
	if !slices.Equal(values, want) || n != 3 {
		t.Fatalf("turns after the next save = %q of %d fields, want %q and the head", values, n, want)
	}
}

// TestScriptCacheFlushed: a save after Redis lost its scripts (a restart,
// SCRIPT FLUSH) loads the script and saves the turn once, for a
// conversation that goes on and for a new one. It runs on a Redis of its
// own, so as not to flush the scripts of others.
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
	now := storetest.Start
	if err := s.Append(ctx, "+1", turn("one", "1"), now, lim); err != nil {
		t.Fatal(err)
	}
	for _, phone := range []string{"+1", "+2"} {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, phone, turn("two", "2"), now, lim); err != nil {
			t.Fatalf("%s: Append after SCRIPT FLUSH: %v", phone, err)
		}
	}
	for phone, want := range map[string]string{"+1": "one,two", "+2": "two"} {
		c, err := s.Load(ctx, phone)
		if err != nil || strings.Join(turnTexts(c), ",") != want {
			t.Fatalf("%s: Load = %q, %v; want %s", phone, turnTexts(c), err, want)
		}
		if _, _, _, n := stored(t, rdb, "mombot:chat:"+phone); n != 1+strings.Count(want, ",")+1 {
			t.Fatalf("%s: %d fields, want the head and the turns only", phone, n)
		}
		if ttl, err := rdb.PTTL(ctx, "mombot:chat:"+phone).Result(); err != nil || ttl <= 0 {
			t.Fatalf("%s: TTL %v, %v; want the conversation's", phone, ttl, err)
		}
	}
}
