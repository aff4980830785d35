package redis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
)

// layouts are the three ways a conversation can be in Redis: this
// version's hash, the previous version's list and the oldest three keys.
// Each writes a conversation of two tool turns for the fixture's phone,
// last active at last, as its version did, and returns the turns; kinds
// are the keys it holds (see fixture.key), in order.
var layouts = []struct {
	name  string
	write func(f *fixture, last time.Time) []conversation.Turn
	kinds []string
}{
	{"hash", func(f *fixture, last time.Time) []conversation.Turn {
		turns := toolTurns(f.tb, "a", 2)
		f.save(last, lim, turns...)
		return turns
	}, []string{"chat:"}},
	{"list", func(f *fixture, last time.Time) []conversation.Turn {
		turns := toolTurns(f.tb, "a", 2)
		f.writeList(f.phone, last, turns, true)
		return turns
	}, []string{"conv:"}},
	{"legacy", func(f *fixture, last time.Time) []conversation.Turn {
		turns := legacyTurns(f.tb, "a", 2)
		f.writeLegacy(last, turns)
		return turnsOf(turns)
	}, []string{"ids:", "last:", "turns:"}},
}

// TestLayoutExpireDelete: whatever its layout, Expire keeps a conversation
// last active after the cutoff as it is, and deletes every key of it at
// the cutoff; History deletes an expired conversation too; Delete deletes
// it, and a second Delete finds nothing.
func TestLayoutExpireDelete(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			f := newFixture(t, nil)
			last := storetest.Start
			turns := l.write(f, last)
			f.checkKeys(l.kinds...)
			before := f.dump()
			if err := f.s.Expire(f.ctx, f.phone, last.Add(-time.Microsecond)); err != nil {
				t.Fatal(err)
			}
			f.checkUnchanged(before)
			f.check(last, turns...)
			if err := f.s.Expire(f.ctx, f.phone, last); err != nil {
				t.Fatal(err)
			}
			f.checkKeys()
			f.checkGone()

			l.write(f, last)
			now := last.Add(lim.Timeout + time.Microsecond)
			if h, err := f.memory(&now).History(f.ctx, f.phone); err != nil || len(h) != 0 {
				t.Fatalf("History of an expired conversation = %d messages, %v; want none", len(h), err)
			}
			f.checkKeys()

			l.write(f, last)
			if err := f.s.Delete(f.ctx, f.phone); err != nil {
				t.Fatal(err)
			}
			f.checkKeys()
			if err := f.s.Delete(f.ctx, f.phone); !errors.Is(err, conversation.ErrNotFound) {
				t.Fatalf("a second Delete: err = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestLayoutReplaced: whatever its layout, Replace keeps a conversation
// that is newer, as it is, and replaces an older one with the new
// conversation, in the hash, with the TTL it is given, deleting the older
// layout's keys.
func TestLayoutReplaced(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			f := newFixture(t, nil)
			turns := l.write(f, storetest.Start)
			before := f.dump()
			c := conversation.Conversation{Phone: f.phone, LastActive: storetest.Start.Add(-time.Second), Turns: []conversation.Turn{turn("copy", "ok"), turns[0]}}
			if ok, err := f.s.Replace(f.ctx, c, time.Hour); ok || err != nil {
				t.Fatalf("Replace over a newer conversation = %v, %v; want false", ok, err)
			}
			f.checkUnchanged(before)
			c.LastActive = storetest.Start.Add(time.Second)
			if ok, err := f.s.Replace(f.ctx, c, time.Hour); !ok || err != nil {
				t.Fatalf("Replace over an older conversation = %v, %v; want true", ok, err)
			}
			f.check(c.LastActive, c.Turns...)
			f.checkHash(c.LastActive, []hashTurn{saved(t, c.Turns[0]), saved(t, c.Turns[1])})
			f.checkTTL(time.Hour + time.Second)
			f.checkKeys("chat:")
		})
	}
}
