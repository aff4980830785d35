package redis_test

import (
	"context"
	"encoding/hex"
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

// writeLegacy stores turns for the phone in the older layout, last active
// at last, as the older version's save left them.
func (f *fixture) writeLegacy(last time.Time, turns []legacyTurn) {
	f.tb.Helper()
	pipe := f.rdb.TxPipeline()
	pipe.Set(f.ctx, f.key("last:"), last.UnixMicro(), time.Hour)
	for _, lt := range turns {
		pipe.RPush(f.ctx, f.key("turns:"), lt.elem)
		pipe.RPush(f.ctx, f.key("ids:"), lt.entry)
	}
	pipe.Expire(f.ctx, f.key("turns:"), time.Hour)
	pipe.Expire(f.ctx, f.key("ids:"), time.Hour)
	if _, err := pipe.Exec(f.ctx); err != nil {
		f.tb.Fatal(err)
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
// keys is loaded and listed as it is, without a write. (Expire, Delete
// and Replace: layouts_test.go.)
func TestLegacyRead(t *testing.T) {
	f := newFixture(t, nil)
	last := storetest.Start
	turns := legacyTurns(t, "a", 3)
	f.writeLegacy(last, turns)
	before := f.dump()

	f.check(last, turnsOf(turns)...)
	now := last.Add(time.Minute)
	h, err := f.memory(&now).History(f.ctx, f.phone)
	if err != nil || len(h) != 12 {
		t.Fatalf("History = %d messages, %v; want 12", len(h), err)
	}
	sums, err := f.s.List(f.ctx)
	if err != nil || len(sums) != 1 || sums[0].Phone != f.phone || sums[0].Turns != 3 || !sums[0].LastActive.Equal(last) {
		t.Fatalf("List = %+v, %v; want %s with 3 turns at %v", sums, err, f.phone, last)
	}
	f.checkUnchanged(before) // a load wrote no hash
}

// TestLegacyMovedBySave: the first save after the upgrade moves the turns
// that stay into the hash, byte for byte, deletes the older keys, and
// checks the new turn's tool ids against the moved turns, with or
// without their header.
func TestLegacyMovedBySave(t *testing.T) {
	f := newFixture(t, nil)
	turns := legacyTurns(t, "a", lim.MaxTurns) // full: the save drops a0
	f.writeLegacy(storetest.Start, turns)
	before := f.dump()

	now := storetest.Start.Add(time.Minute)
	f.refuse(now, lim, toolTurn("again", "toolu_a1")) // headerless
	f.refuse(now, lim, toolTurn("again", "toolu_a2")) // with header
	f.checkUnchanged(before)                          // a refused save moved nothing
	// The oldest turn is dropped by this save, so its id is free.
	next := toolTurn("next", "toolu_a0")
	f.save(now, lim, next)
	f.checkKeys("chat:")
	f.checkTTL(lim.Timeout + time.Second)
	f.check(now, append(turnsOf(turns[1:]), next)...)

	// The moved turns' ids are checked by the saves that follow too, and
	// leave as the cap drops their turns.
	f.save(now, lim, toolTurn("b", "toolu_b0"), toolTurn("b", "toolu_b1"))
	// The next save keeps a4 to a9: a4 (headerless) and a5 (with its
	// header) are in use, a3 leaves with this save.
	f.refuse(now, lim, toolTurn("again", "toolu_a4"))
	f.refuse(now, lim, toolTurn("again", "toolu_a5"))
	f.save(now, lim, toolTurn("again", "toolu_a3"))
}

// TestLegacyExpiredBySave: a save after the older layout's conversation
// expired starts anew and deletes the older keys.
func TestLegacyExpiredBySave(t *testing.T) {
	f := newFixture(t, nil)
	f.writeLegacy(storetest.Start, legacyTurns(t, "a", 2))
	later := storetest.Start.Add(lim.Timeout + time.Second)
	tr := toolTurn("new", "toolu_a0")
	f.save(later, lim, tr)
	f.check(later, tr)
	f.checkKeys("chat:")
}

// TestRefusedTurnNotInConversation: a turn refused for a reused tool id is
// written into a field of its own and deleted by the same transaction: no
// load, list or save sees it.
func TestRefusedTurnNotInConversation(t *testing.T) {
	f := newFixture(t, nil)
	now := storetest.Start
	first := toolTurn("one", "toolu_1")
	f.save(now, lim, first)
	f.refuse(now.Add(time.Minute), lim, toolTurn("two", "toolu_1"))
	if _, _, _, n := stored(t, f.rdb, f.key("chat:")); n != 2 {
		t.Fatalf("%d fields after a refused save, want 2: the head and the turn", n)
	}
	f.check(now, first) // the refused save's time is not the last activity
	f.listed(1)
	second := toolTurn("two", "toolu_2")
	f.save(now.Add(time.Minute), lim, second)
	_, _, values, n := stored(t, f.rdb, f.key("chat:"))
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
