package redis_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
)

// The previous version's layout (format 2, list.go): one list per
// conversation, its head then its turns. These tests write it by hand, as
// that version left it, and check that the store reads, lists, expires,
// deletes and replaces it where it is, and that the first save turns it
// into the hash without losing or reordering a turn.

// listLine returns tr's element in the list and its line in the list's
// head: its checksum (or "-" when not trusted) and its tool_use ids, hex.
// A turn moved over into the hash keeps that line after its field's colon.
func listLine(tb testing.TB, tr conversation.Turn, trusted bool) (elem, line string) {
	tb.Helper()
	data, err := tr.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	line = "-"
	if trusted {
		line = strconv.FormatUint(uint64(conversation.Checksum(data)), 16)
	}
	for _, id := range tr.ToolUseIDs() {
		line += " " + hex.EncodeToString([]byte(id))
	}
	return string(data), line
}

// writeList stores turns for phone under prefix in the previous version's
// list, last active at last, with a TTL of an hour: the head, with each
// turn's checksum if trusted and "-" if not, then the turns, then extra
// elements after them, which are no part of the conversation (the turn of
// a refused save).
func writeList(tb testing.TB, rdb *goredis.Client, prefix, phone string, last time.Time, turns []conversation.Turn, trusted bool, extra ...string) {
	tb.Helper()
	ctx := context.Background()
	key := prefix + "conv:" + phone
	head := "2 " + strconv.FormatInt(last.UnixMicro(), 10) + "\n"
	elems := []any{""}
	for _, tr := range turns {
		elem, line := listLine(tb, tr, trusted)
		head += line + "\n"
		elems = append(elems, elem)
	}
	elems[0] = head
	for _, e := range extra {
		elems = append(elems, e)
	}
	pipe := rdb.TxPipeline()
	pipe.Del(ctx, key)
	pipe.RPush(ctx, key, elems...)
	pipe.Expire(ctx, key, time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatal(err)
	}
}

// toolTurns returns n valid tool turns with tool ids toolu_<label><i>.
func toolTurns(tb testing.TB, label string, n int) []conversation.Turn {
	return turnsOf(legacyTurns(tb, label, n))
}

// invalidTurn fails conversation.ValidateTurn (it starts with the
// assistant) but is JSON that decodes as a turn.
var invalidTurn = conversation.Turn{Messages: []conversation.Message{
	conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("no question")),
}}

// hashTurn is what a turn should be in a conversation's hash: its field
// ("" for a save's new field, 16 hex digits), what follows the field's
// colon in the head, and its value.
type hashTurn struct {
	field, line, elem string
}

// moved returns how a turn of the list at place i (from 1) should be in the
// hash after the list was turned into it.
func moved(tb testing.TB, i int, tr conversation.Turn, trusted bool) hashTurn {
	elem, line := listLine(tb, tr, trusted)
	return hashTurn{field: "m" + strconv.Itoa(i), line: line, elem: elem}
}

// saved returns how a turn saved through the store should be in the hash.
func saved(tb testing.TB, tr conversation.Turn) hashTurn {
	elem, line := listLine(tb, tr, true)
	return hashTurn{line: line, elem: elem}
}

var newFieldName = regexp.MustCompile(`^[0-9a-f]{16}$`)

// checkHash fails unless the list at key is gone and the conversation's
// hash next to it (chat: for conv:) holds exactly the head "h", last
// active at last and counting want's turns, with a line for each of want
// in order, and a field for each holding its value.
func checkHash(tb testing.TB, rdb *goredis.Client, key string, last time.Time, want []hashTurn) {
	tb.Helper()
	ctx := context.Background()
	if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
		tb.Fatalf("%s is still there", key)
	}
	key = chatKey(key)
	if typ, _ := rdb.Type(ctx, key).Result(); typ != "hash" {
		tb.Fatalf("%s is a %s, want a hash", key, typ)
	}
	fields, err := rdb.HGetAll(ctx, key).Result()
	if err != nil {
		tb.Fatal(err)
	}
	if len(fields) != 1+len(want) {
		tb.Fatalf("hash of %d fields, want the head and %d turns: %q", len(fields), len(want), fields)
	}
	lines := strings.SplitAfter(fields["h"], "\n")
	if wantFirst := fmt.Sprintf("3 %d %d\n", last.UnixMicro(), len(want)); lines[0] != wantFirst {
		tb.Fatalf("head starts %q, want %q", lines[0], wantFirst)
	}
	if lines[len(lines)-1] != "" || len(lines) != len(want)+2 {
		tb.Fatalf("head %q, want %d lines after the first, each ending in a newline", fields["h"], len(want))
	}
	for i, w := range want {
		field, rest, ok := strings.Cut(strings.TrimSuffix(lines[i+1], "\n"), ":")
		if !ok || rest != w.line {
			tb.Fatalf("head line %d = %q, want field:%s", i+1, lines[i+1], w.line)
		}
		if (w.field != "" && field != w.field) || (w.field == "" && !newFieldName.MatchString(field)) {
			tb.Fatalf("head line %d has field %q, want %q (a save's: 16 hex digits)", i+1, field, w.field)
		}
		if v, ok := fields[field]; !ok || v != w.elem {
			tb.Fatalf("field %s = %q (there: %v), want %s", field, v, ok, w.elem)
		}
	}
}

// chatKey returns the key of the conversation's hash for the key of its
// list.
func chatKey(listKey string) string { return strings.Replace(listKey, "conv:", "chat:", 1) }

// checkTTL fails unless the TTL of the hash next to the list at key is
// at most want and less than a minute below it.
func checkTTL(tb testing.TB, rdb *goredis.Client, key string, want time.Duration) {
	tb.Helper()
	ttl, err := rdb.PTTL(context.Background(), chatKey(key)).Result()
	if err != nil || ttl > want || ttl <= want-time.Minute {
		tb.Fatalf("TTL of %s = %v, %v; want %v", key, ttl, err, want)
	}
}

// checkList fails unless key is still a list of n elements: nothing wrote
// it.
func checkList(tb testing.TB, rdb *goredis.Client, key string, n int64) {
	tb.Helper()
	ctx := context.Background()
	if typ, _ := rdb.Type(ctx, key).Result(); typ != "list" {
		tb.Fatalf("%s is a %s, want the list left as it was", key, typ)
	}
	if got, _ := rdb.LLen(ctx, key).Result(); got != n {
		tb.Fatalf("list of %d elements, want %d as written", got, n)
	}
}

// TestListLoad: a load reads a list as it is, byte for byte and to the
// microsecond, without writing it: turns whose checksum matches as stored,
// any other validated, and an invalid one dropped.
func TestListLoad(t *testing.T) {
	a := toolTurns(t, "a", 3)
	tests := []struct {
		name    string
		turns   []conversation.Turn
		trusted bool
		change  func(ctx context.Context, rdb *goredis.Client, key string) error
		want    []conversation.Turn
	}{
		{name: "checksums", turns: append(a, turn("hi", "hello")), trusted: true, want: append(a, turn("hi", "hello"))},
		{name: "unchecked", turns: []conversation.Turn{a[0], invalidTurn, a[1]}, want: []conversation.Turn{a[0], a[1]}},
		{
			// The head has the checksum of a[2], no longer its turn's.
			name: "changed by hand", turns: a, trusted: true,
			change: func(ctx context.Context, rdb *goredis.Client, key string) error {
				elem, _ := listLine(t, invalidTurn, false)
				return rdb.LSet(ctx, key, 3, elem).Err()
			},
			want: a[:2],
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := newPrefix(t)
			s := open(t, prefix, nil)
			rdb := rawClient(t)
			ctx := context.Background()
			const phone = "+14155551234"
			key := prefix + "conv:" + phone
			writeList(t, rdb, prefix, phone, storetest.Start, tt.turns, tt.trusted)
			if tt.change != nil {
				if err := tt.change(ctx, rdb, key); err != nil {
					t.Fatal(err)
				}
			}
			c, err := s.Load(ctx, phone)
			if err != nil {
				t.Fatal(err)
			}
			if c.Phone != phone || c.LastActive.UnixMicro() != storetest.Start.UnixMicro() {
				t.Fatalf("loaded %s last active %v, want %s at %v", c.Phone, c.LastActive, phone, storetest.Start)
			}
			sameTurns(t, c.Turns, tt.want)
			checkList(t, rdb, key, int64(1+len(tt.turns)))
		})
	}
}

// TestListRefusedTurnAfterLines: an element after the turns the head has
// lines for (the turn of a save the previous version refused) is no part
// of the conversation: not loaded, not counted, not moved by the next save.
func TestListRefusedTurnAfterLines(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "conv:" + phone
	turns := toolTurns(t, "a", 2)
	refused, _ := listLine(t, conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_a1", "r", "ok")}, true)
	writeList(t, rdb, prefix, phone, storetest.Start, turns, true, refused)

	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	sameTurns(t, c.Turns, turns)
	if sums, err := s.List(ctx); err != nil || len(sums) != 1 || sums[0].Turns != 2 {
		t.Fatalf("List = %+v, %v; want 2 turns", sums, err)
	}

	now := storetest.Start.Add(time.Minute)
	next := conversation.Turn{Messages: storetest.ToolTurn("next", "toolu_b0", "r", "ok")}
	if err := s.Append(ctx, phone, next, now, lim); err != nil {
		t.Fatal(err)
	}
	c, err = s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	sameTurns(t, c.Turns, append(turns[:2:2], next))
	checkHash(t, rdb, key, now, []hashTurn{moved(t, 1, turns[0], true), moved(t, 2, turns[1], true), saved(t, next)})
}

// TestListMovedBySave: the first save after the upgrade turns the list
// into the hash, the turns that stay as m2, m3, ... with their lines and
// bytes, then saves: the cap drops the oldest turn, whose tool id is then
// free, the last activity is the save's, and the TTL the timeout's. The
// saves that follow go on on the hash and drop the moved turns in turn.
func TestListMovedBySave(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		t.Run("trusted="+strconv.FormatBool(trusted), func(t *testing.T) {
			prefix := newPrefix(t)
			s := open(t, prefix, nil)
			rdb := rawClient(t)
			ctx := context.Background()
			const phone = "+14155551234"
			key := prefix + "conv:" + phone
			turns := toolTurns(t, "a", lim.MaxTurns) // full: the save drops a0
			writeList(t, rdb, prefix, phone, storetest.Start, turns, trusted)

			now := storetest.Start.Add(time.Minute)
			mem, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			next := conversation.Turn{Messages: storetest.ToolTurn("next", "toolu_a0", "r", "ok")}
			if err := mem.Save(ctx, phone, next); err != nil {
				t.Fatalf("save with the id of the turn the cap drops: %v", err)
			}
			c, err := mem.Current(ctx, phone)
			if err != nil {
				t.Fatal(err)
			}
			if !c.LastActive.Equal(now) {
				t.Fatalf("last active %v, want the save's %v", c.LastActive, now)
			}
			want := append(turns[1:len(turns):len(turns)], next)
			sameTurns(t, c.Turns, want)
			var hash []hashTurn
			for i := 1; i < len(turns); i++ {
				hash = append(hash, moved(t, i+1, turns[i], trusted))
			}
			checkHash(t, rdb, key, now, append(hash, saved(t, next)))
			checkTTL(t, rdb, key, lim.Timeout+time.Second)

			// The next save drops m2, and a1's id with it.
			now = now.Add(time.Minute)
			again := conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_a1", "r", "ok")}
			if err := mem.Save(ctx, phone, again); err != nil {
				t.Fatalf("second save: %v", err)
			}
			c, err = mem.Current(ctx, phone)
			if err != nil {
				t.Fatal(err)
			}
			sameTurns(t, c.Turns, append(want[1:len(want):len(want)], again))
			checkHash(t, rdb, key, now, append(hash[1:len(hash):len(hash)], saved(t, next), saved(t, again)))
		})
	}
}

// TestListToolIDInUse: a save that reuses the tool id of a turn of the list
// that stays is refused and changes nothing: the list is as it was, with
// its last activity, and nothing of the refused turn is left.
func TestListToolIDInUse(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "conv:" + phone
	turns := toolTurns(t, "a", 3)
	writeList(t, rdb, prefix, phone, storetest.Start, turns, true)

	now := storetest.Start.Add(time.Minute)
	reuse := conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_a1", "r", "ok")}
	if err := s.Append(ctx, phone, reuse, now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("Append reusing toolu_a1: err = %v, want ErrInvalidTurn", err)
	}
	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if !c.LastActive.Equal(storetest.Start) {
		t.Fatalf("last active %v after a refused save, want the list's %v", c.LastActive, storetest.Start)
	}
	sameTurns(t, c.Turns, turns)
	checkList(t, rdb, key, 4)
	if n, _ := rdb.Exists(ctx, chatKey(key)).Result(); n != 0 {
		t.Fatalf("a refused save left a hash: %v", rdb.HGetAll(ctx, chatKey(key)).Val())
	}

	next := conversation.Turn{Messages: storetest.ToolTurn("next", "toolu_b0", "r", "ok")}
	if err := s.Append(ctx, phone, next, now, lim); err != nil {
		t.Fatal(err)
	}
	c, err = s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	sameTurns(t, c.Turns, append(turns[:3:3], next))
}

// TestListExpiredBySave: a save into a list last active the timeout ago
// goes on with its turns; one a microsecond later starts anew, the list's
// turns and their tool ids gone.
func TestListExpiredBySave(t *testing.T) {
	tests := []struct {
		name  string
		after time.Duration
		kept  bool
	}{
		{"at the timeout", lim.Timeout, true},
		{"after the timeout", lim.Timeout + time.Microsecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := newPrefix(t)
			s := open(t, prefix, nil)
			rdb := rawClient(t)
			ctx := context.Background()
			const phone = "+14155551234"
			key := prefix + "conv:" + phone
			turns := toolTurns(t, "a", 2)
			writeList(t, rdb, prefix, phone, storetest.Start, turns, true)

			now := storetest.Start.Add(tt.after)
			next := conversation.Turn{Messages: storetest.ToolTurn("new", "toolu_a0", "r", "ok")}
			err := s.Append(ctx, phone, next, now, lim)
			if tt.kept {
				// a0 stays: its id is in use.
				if !errors.Is(err, conversation.ErrInvalidTurn) {
					t.Fatalf("Append reusing toolu_a0 at the timeout: err = %v, want ErrInvalidTurn", err)
				}
				next = conversation.Turn{Messages: storetest.ToolTurn("new", "toolu_b0", "r", "ok")}
				err = s.Append(ctx, phone, next, now, lim)
			}
			if err != nil {
				t.Fatal(err)
			}
			mem, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			c, err := mem.Current(ctx, phone)
			if err != nil {
				t.Fatal(err)
			}
			if !c.LastActive.Equal(now) {
				t.Fatalf("last active %v, want the save's %v", c.LastActive, now)
			}
			want, hash := []conversation.Turn{next}, []hashTurn{saved(t, next)}
			if tt.kept {
				want = append(turns[:2:2], next)
				hash = []hashTurn{moved(t, 1, turns[0], true), moved(t, 2, turns[1], true), saved(t, next)}
			}
			sameTurns(t, c.Turns, want)
			checkHash(t, rdb, key, now, hash)
			checkTTL(t, rdb, key, lim.Timeout+time.Second)
		})
	}
}

// TestListSummary: List describes a list by its head (the turns it has
// lines for), next to a conversation in the hash.
func TestListSummary(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	refused, _ := listLine(t, turn("refused", "no"), true)
	writeList(t, rdb, prefix, "+1", storetest.Start, toolTurns(t, "a", 3), true, refused)
	writeList(t, rdb, prefix, "+2", storetest.Start.Add(-time.Hour), toolTurns(t, "b", 2), false)
	hashed := storetest.Start.Add(time.Second)
	if err := s.Append(ctx, "+3", turn("hi", "hello"), hashed, lim); err != nil {
		t.Fatal(err)
	}
	sums, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []conversation.Summary{
		{Phone: "+1", LastActive: storetest.Start, Turns: 3},
		{Phone: "+2", LastActive: storetest.Start.Add(-time.Hour), Turns: 2},
		{Phone: "+3", LastActive: hashed, Turns: 1},
	}
	if len(sums) != len(want) {
		t.Fatalf("List = %+v, want %+v", sums, want)
	}
	for i, w := range want {
		if g := sums[i]; g.Phone != w.Phone || !g.LastActive.Equal(w.LastActive) || g.Turns != w.Turns {
			t.Fatalf("List[%d] = %+v, want %+v", i, g, w)
		}
	}
	checkList(t, rdb, prefix+"conv:+1", 5)
}

// TestListExpire: Expire keeps a list last active after the cutoff and
// deletes it at the cutoff; History deletes an expired list too.
func TestListExpire(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "conv:" + phone
	last := storetest.Start
	writeList(t, rdb, prefix, phone, last, toolTurns(t, "a", 2), true)

	if err := s.Expire(ctx, phone, last.Add(-time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	checkList(t, rdb, key, 3)
	if err := s.Expire(ctx, phone, last); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("Expire at the last activity left the list")
	}
	if _, err := s.Load(ctx, phone); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Load after Expire: err = %v, want ErrNotFound", err)
	}

	writeList(t, rdb, prefix, phone, last, toolTurns(t, "a", 2), true)
	mem, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return last.Add(lim.Timeout + time.Microsecond) }})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := mem.History(ctx, phone); err != nil || len(h) != 0 {
		t.Fatalf("History of an expired list = %d messages, %v; want none", len(h), err)
	}
	if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("History left an expired list")
	}
}

// TestListDelete: Delete deletes a list, and a second Delete finds nothing.
func TestListDelete(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	writeList(t, rdb, prefix, phone, storetest.Start, toolTurns(t, "a", 2), true)
	if err := s.Delete(ctx, phone); err != nil {
		t.Fatal(err)
	}
	if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) != 0 {
		t.Fatalf("keys left after Delete: %q", keys)
	}
	if err := s.Delete(ctx, phone); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("a second Delete: err = %v, want ErrNotFound", err)
	}
}

// TestListReplaced: Replace keeps a list that is newer, and replaces an
// older one with the new conversation, in the hash.
func TestListReplaced(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "conv:" + phone
	turns := toolTurns(t, "a", 2)
	writeList(t, rdb, prefix, phone, storetest.Start, turns, true)

	c := conversation.Conversation{Phone: phone, LastActive: storetest.Start.Add(-time.Second), Turns: []conversation.Turn{turn("copy", "ok"), turns[0]}}
	if ok, err := s.Replace(ctx, c, time.Hour); ok || err != nil {
		t.Fatalf("Replace over a newer list = %v, %v; want false", ok, err)
	}
	checkList(t, rdb, key, 3)
	c.LastActive = storetest.Start.Add(time.Second)
	if ok, err := s.Replace(ctx, c, time.Hour); !ok || err != nil {
		t.Fatalf("Replace over an older list = %v, %v; want true", ok, err)
	}
	got, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if !got.LastActive.Equal(c.LastActive) {
		t.Fatalf("last active %v, want %v", got.LastActive, c.LastActive)
	}
	sameTurns(t, got.Turns, c.Turns)
	checkHash(t, rdb, key, c.LastActive, []hashTurn{saved(t, c.Turns[0]), saved(t, c.Turns[1])})
	checkTTL(t, rdb, key, time.Hour+time.Second)
}

// TestListFewerTurnsThanLines: a list with fewer turns than its head has
// lines (changed by hand) is its turns, every one validated whatever its
// line says; the next save moves them with lines built from their JSON, so
// that their tool ids are still checked.
func TestListFewerTurnsThanLines(t *testing.T) {
	prefix := newPrefix(t)
	s := open(t, prefix, nil)
	rdb := rawClient(t)
	ctx := context.Background()
	const phone = "+14155551234"
	key := prefix + "conv:" + phone
	a := toolTurns(t, "a", 3)
	stored := []conversation.Turn{a[0], invalidTurn, a[1], a[2]}
	writeList(t, rdb, prefix, phone, storetest.Start, stored, true)
	if err := rdb.RPop(ctx, key).Err(); err != nil { // a2 goes, its line stays
		t.Fatal(err)
	}

	c, err := s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	if !c.LastActive.Equal(storetest.Start) {
		t.Fatalf("last active %v, want %v", c.LastActive, storetest.Start)
	}
	sameTurns(t, c.Turns, []conversation.Turn{a[0], a[1]})
	if sums, err := s.List(ctx); err != nil || len(sums) != 1 || sums[0].Turns != 3 {
		t.Fatalf("List = %+v, %v; want the 3 turns there", sums, err)
	}
	checkList(t, rdb, key, 4)

	now := storetest.Start.Add(time.Minute)
	reuse := conversation.Turn{Messages: storetest.ToolTurn("again", "toolu_a1", "r", "ok")}
	if err := s.Append(ctx, phone, reuse, now, lim); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("Append reusing toolu_a1 of a moved turn: err = %v, want ErrInvalidTurn", err)
	}
	next := conversation.Turn{Messages: storetest.ToolTurn("next", "toolu_a2", "r", "ok")}
	if err := s.Append(ctx, phone, next, now, lim); err != nil {
		t.Fatalf("Append with the id of the turn removed by hand: %v", err)
	}
	c, err = s.Load(ctx, phone)
	if err != nil {
		t.Fatal(err)
	}
	sameTurns(t, c.Turns, []conversation.Turn{a[0], a[1], next})
	checkHash(t, rdb, key, now, []hashTurn{
		moved(t, 1, a[0], false), moved(t, 2, invalidTurn, false), moved(t, 3, a[1], false), saved(t, next),
	})
}
