package redis_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

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

// hashLine returns tr's line in the hash's head after its field's colon:
// its checksum (or "-" when not trusted) and the keys of its tool_use ids,
// the first 64 bits of their SHA-1 in hex, as the store's Go and Lua both
// compute them.
func hashLine(tb testing.TB, tr conversation.Turn, trusted bool) (elem, line string) {
	tb.Helper()
	elem, line = listLine(tb, tr, trusted)
	line, _, _ = strings.Cut(line, " ")
	for _, id := range tr.ToolUseIDs() {
		sum := sha1.Sum([]byte(id))
		line += " " + hex.EncodeToString(sum[:8])
	}
	return elem, line
}

// writeList stores turns for phone in the previous version's list, last
// active at last, with a TTL of an hour: the head, with each turn's
// checksum if trusted and "-" if not, then the turns, then extra elements
// after them, which are no part of the conversation (the turn of a refused
// save).
func (f *fixture) writeList(phone string, last time.Time, turns []conversation.Turn, trusted bool, extra ...string) {
	f.tb.Helper()
	key := f.prefix + "conv:" + phone
	head := "2 " + strconv.FormatInt(last.UnixMicro(), 10) + "\n"
	elems := []any{""}
	for _, tr := range turns {
		elem, line := listLine(f.tb, tr, trusted)
		head += line + "\n"
		elems = append(elems, elem)
	}
	elems[0] = head
	for _, e := range extra {
		elems = append(elems, e)
	}
	pipe := f.rdb.TxPipeline()
	pipe.Del(f.ctx, key)
	pipe.RPush(f.ctx, key, elems...)
	pipe.Expire(f.ctx, key, time.Hour)
	if _, err := pipe.Exec(f.ctx); err != nil {
		f.tb.Fatal(err)
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
// ("" for a save's new field, 11 characters of base64url), what follows
// the field's colon in the head, and its value.
type hashTurn struct {
	field, line, elem string
}

// moved returns how a turn of the list at place i (from 1) should be in the
// hash after the list was turned into it.
func moved(tb testing.TB, i int, tr conversation.Turn, trusted bool) hashTurn {
	elem, line := hashLine(tb, tr, trusted)
	return hashTurn{field: "m" + strconv.Itoa(i), line: line, elem: elem}
}

// saved returns how a turn saved through the store should be in the hash.
func saved(tb testing.TB, tr conversation.Turn) hashTurn {
	elem, line := hashLine(tb, tr, true)
	return hashTurn{line: line, elem: elem}
}

var newFieldName = regexp.MustCompile(`^[A-Za-z0-9_-]{11}$`)

// checkHash fails unless the phone's list is gone and its hash holds
// exactly the head "h", last active at last and counting want's turns,
// with a line for each of want in order, and a field for each holding its
// value.
func (f *fixture) checkHash(last time.Time, want []hashTurn) {
	f.tb.Helper()
	if n, _ := f.rdb.Exists(f.ctx, f.key("conv:")).Result(); n != 0 {
		f.tb.Fatalf("%s is still there", f.key("conv:"))
	}
	key := f.key("chat:")
	if typ, _ := f.rdb.Type(f.ctx, key).Result(); typ != "hash" {
		f.tb.Fatalf("%s is a %s, want a hash", key, typ)
	}
	fields, err := f.rdb.HGetAll(f.ctx, key).Result()
	if err != nil {
		f.tb.Fatal(err)
	}
	if len(fields) != 1+len(want) {
		f.tb.Fatalf("hash of %d fields, want the head and %d turns: %q", len(fields), len(want), fields)
	}
	lines := strings.SplitAfter(fields["h"], "\n")
	if wantFirst := fmt.Sprintf("3 %d %d\n", last.UnixMicro(), len(want)); lines[0] != wantFirst {
		f.tb.Fatalf("head starts %q, want %q", lines[0], wantFirst)
	}
	if lines[len(lines)-1] != "" || len(lines) != len(want)+2 {
		f.tb.Fatalf("head %q, want %d lines after the first, each ending in a newline", fields["h"], len(want))
	}
	for i, w := range want {
		field, rest, ok := strings.Cut(strings.TrimSuffix(lines[i+1], "\n"), ":")
		if !ok || rest != w.line {
			f.tb.Fatalf("head line %d = %q, want field:%s", i+1, lines[i+1], w.line)
		}
		if (w.field != "" && field != w.field) || (w.field == "" && !newFieldName.MatchString(field)) {
			f.tb.Fatalf("head line %d has field %q, want %q (a save's: 11 characters of base64url)", i+1, field, w.field)
		}
		if v, ok := fields[field]; !ok || v != w.elem {
			f.tb.Fatalf("field %s = %q (there: %v), want %s", field, v, ok, w.elem)
		}
	}
}

// checkList fails unless the phone's list is still a list of n elements:
// nothing wrote it.
func (f *fixture) checkList(n int64) {
	f.tb.Helper()
	key := f.key("conv:")
	if typ, _ := f.rdb.Type(f.ctx, key).Result(); typ != "list" {
		f.tb.Fatalf("%s is a %s, want the list left as it was", key, typ)
	}
	if got, _ := f.rdb.LLen(f.ctx, key).Result(); got != n {
		f.tb.Fatalf("list of %d elements, want %d as written", got, n)
	}
}

// listed fails unless List describes only the phone's conversation, with
// n turns.
func (f *fixture) listed(n int) {
	f.tb.Helper()
	if sums, err := f.s.List(f.ctx); err != nil || len(sums) != 1 || sums[0].Phone != f.phone || sums[0].Turns != n {
		f.tb.Fatalf("List = %+v, %v; want %s with %d turns", sums, err, f.phone, n)
	}
}

// memory returns a conversation.Memory on the fixture's store whose clock
// reads *now, so that a test moves it by setting now.
func (f *fixture) memory(now *time.Time) *conversation.Memory {
	f.tb.Helper()
	mem, err := conversation.New(f.s, &conversation.Options{Now: func() time.Time { return *now }})
	if err != nil {
		f.tb.Fatal(err)
	}
	return mem
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
		change  func(f *fixture) error
		want    []conversation.Turn
	}{
		{name: "checksums", turns: append(a, turn("hi", "hello")), trusted: true, want: append(a, turn("hi", "hello"))},
		{name: "unchecked", turns: []conversation.Turn{a[0], invalidTurn, a[1]}, want: []conversation.Turn{a[0], a[1]}},
		{
			// The head has the checksum of a[2], no longer its turn's.
			name: "changed by hand", turns: a, trusted: true,
			change: func(f *fixture) error {
				elem, _ := listLine(t, invalidTurn, false)
				return f.rdb.LSet(f.ctx, f.key("conv:"), 3, elem).Err()
			},
			want: a[:2],
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.writeList(f.phone, storetest.Start, tt.turns, tt.trusted)
			if tt.change != nil {
				if err := tt.change(f); err != nil {
					t.Fatal(err)
				}
			}
			f.check(storetest.Start, tt.want...)
			f.checkList(int64(1 + len(tt.turns)))
		})
	}
}

// TestListRefusedTurnAfterLines: an element after the turns the head has
// lines for (the turn of a save the previous version refused) is no part
// of the conversation: not loaded, not counted, not moved by the next save.
func TestListRefusedTurnAfterLines(t *testing.T) {
	f := newFixture(t, nil)
	turns := toolTurns(t, "a", 2)
	refused, _ := listLine(t, toolTurn("again", "toolu_a1"), true)
	f.writeList(f.phone, storetest.Start, turns, true, refused)
	f.check(storetest.Start, turns...)
	f.listed(2)

	now := storetest.Start.Add(time.Minute)
	next := toolTurn("next", "toolu_b0")
	f.save(now, lim, next)
	f.check(now, append(turns[:2:2], next)...)
	f.checkHash(now, []hashTurn{moved(t, 1, turns[0], true), moved(t, 2, turns[1], true), saved(t, next)})
}

// TestListMovedBySave: the first save after the upgrade turns the list
// into the hash, the turns that stay as m2, m3, ... with their lines and
// bytes, then saves: the cap drops the oldest turn, whose tool id is then
// free, the last activity is the save's, and the TTL the timeout's. The
// saves that follow go on on the hash and drop the moved turns in turn.
func TestListMovedBySave(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		t.Run("trusted="+strconv.FormatBool(trusted), func(t *testing.T) {
			f := newFixture(t, nil)
			turns := toolTurns(t, "a", lim.MaxTurns) // full: the save drops a0
			f.writeList(f.phone, storetest.Start, turns, trusted)

			now := storetest.Start.Add(time.Minute)
			mem := f.memory(&now)
			next := toolTurn("next", "toolu_a0")
			if err := mem.Save(f.ctx, f.phone, next); err != nil {
				t.Fatalf("save with the id of the turn the cap drops: %v", err)
			}
			want := append(turns[1:len(turns):len(turns)], next)
			f.check(now, want...)
			var hash []hashTurn
			for i := 1; i < len(turns); i++ {
				hash = append(hash, moved(t, i+1, turns[i], trusted))
			}
			f.checkHash(now, append(hash, saved(t, next)))
			f.checkTTL(lim.Timeout + time.Second)

			// The next save drops m2, and a1's id with it.
			now = now.Add(time.Minute)
			again := toolTurn("again", "toolu_a1")
			if err := mem.Save(f.ctx, f.phone, again); err != nil {
				t.Fatalf("second save: %v", err)
			}
			f.check(now, append(want[1:len(want):len(want)], again)...)
			f.checkHash(now, append(hash[1:len(hash):len(hash)], saved(t, next), saved(t, again)))
		})
	}
}

// TestListToolIDInUse: a save that reuses the tool id of a turn of the list
// that stays is refused and changes nothing: the list is as it was, with
// its last activity, and nothing of the refused turn is left.
func TestListToolIDInUse(t *testing.T) {
	f := newFixture(t, nil)
	turns := toolTurns(t, "a", 3)
	f.writeList(f.phone, storetest.Start, turns, true)
	before := f.dump()

	now := storetest.Start.Add(time.Minute)
	f.refuse(now, lim, toolTurn("again", "toolu_a1"))
	f.check(storetest.Start, turns...)
	f.checkList(4)
	f.checkUnchanged(before) // no hash either

	next := toolTurn("next", "toolu_b0")
	f.save(now, lim, next)
	f.check(now, append(turns[:3:3], next)...)
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
			f := newFixture(t, nil)
			turns := toolTurns(t, "a", 2)
			f.writeList(f.phone, storetest.Start, turns, true)

			now := storetest.Start.Add(tt.after)
			next := toolTurn("new", "toolu_a0")
			want, hash := []conversation.Turn{next}, []hashTurn{saved(t, next)}
			if tt.kept {
				f.refuse(now, lim, next) // a0 stays: its id is in use
				next = toolTurn("new", "toolu_b0")
				want = append(turns[:2:2], next)
				hash = []hashTurn{moved(t, 1, turns[0], true), moved(t, 2, turns[1], true), saved(t, next)}
			}
			f.save(now, lim, next)
			// Memory, whose clock reads the save's time, sees the
			// conversation as current.
			c, err := f.memory(&now).Current(f.ctx, f.phone)
			if err != nil {
				t.Fatal(err)
			}
			if !c.LastActive.Equal(now) {
				t.Fatalf("last active %v, want the save's %v", c.LastActive, now)
			}
			sameTurns(t, c.Turns, want)
			f.checkHash(now, hash)
			f.checkTTL(lim.Timeout + time.Second)
		})
	}
}

// TestListSummary: List describes a list by its head (the turns it has
// lines for), next to a conversation in the hash.
func TestListSummary(t *testing.T) {
	f := newFixture(t, nil)
	refused, _ := listLine(t, turn("refused", "no"), true)
	f.writeList(f.phone, storetest.Start, toolTurns(t, "a", 3), true, refused)
	f.writeList("+2", storetest.Start.Add(-time.Hour), toolTurns(t, "b", 2), false)
	hashed := storetest.Start.Add(time.Second)
	if err := f.s.Append(f.ctx, "+3", turn("hi", "hello"), hashed, lim); err != nil {
		t.Fatal(err)
	}
	sums, err := f.s.List(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []conversation.Summary{
		{Phone: f.phone, LastActive: storetest.Start, Turns: 3},
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
	f.checkList(5)
}

// TestListFewerTurnsThanLines: a list with fewer turns than its head has
// lines (changed by hand) is its turns, every one validated whatever its
// line says; the next save moves them with lines built from their JSON, so
// that their tool ids are still checked.
func TestListFewerTurnsThanLines(t *testing.T) {
	f := newFixture(t, nil)
	a := toolTurns(t, "a", 3)
	f.writeList(f.phone, storetest.Start, []conversation.Turn{a[0], invalidTurn, a[1], a[2]}, true)
	if err := f.rdb.RPop(f.ctx, f.key("conv:")).Err(); err != nil { // a2 goes, its line stays
		t.Fatal(err)
	}
	f.check(storetest.Start, a[0], a[1])
	f.listed(3) // the turns there
	f.checkList(4)

	now := storetest.Start.Add(time.Minute)
	f.refuse(now, lim, toolTurn("again", "toolu_a1")) // of a moved turn
	next := toolTurn("next", "toolu_a2")              // of the turn removed by hand
	f.save(now, lim, next)
	f.check(now, a[0], a[1], next)
	f.checkHash(now, []hashTurn{
		moved(t, 1, a[0], false), moved(t, 2, invalidTurn, false), moved(t, 3, a[1], false), saved(t, next),
	})
}
