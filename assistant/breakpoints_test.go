package assistant

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// markLast puts the breakpoint on the last block that can carry one, and
// leaves the blocks it does not mark byte for byte.
func TestMarkLast(t *testing.T) {
	tests := []struct {
		name, content, ttl, want string
	}{
		{"string", `"Tacos & <salsa>"`, TTL5m, `[{"type":"text","text":"Tacos & <salsa>","cache_control":{"type":"ephemeral"}}]`},
		{"last block", `[{"type":"text","text":"a"},{"type":"text","text":"b","citations":[]}]`, TTL1h,
			`[{"type":"text","text":"a"},{"type":"text","text":"b","citations":[],"cache_control":{"type":"ephemeral","ttl":"1h"}}]`},
		{"thinking is skipped", `[{"type":"text","text":"a"},{"type":"thinking","thinking":"t","signature":"s"}]`, TTL5m,
			`[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"thinking","thinking":"t","signature":"s"}]`},
		{"only thinking", `[{"type":"thinking","thinking":"t","signature":"s"}]`, TTL5m, `[{"type":"thinking","thinking":"t","signature":"s"}]`},
		{"marked already", `[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]`, TTL1h, `[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := conversation.Message{Role: conversation.RoleAssistant, Content: json.RawMessage(tt.content)}
			got, err := markLast(m, tt.ttl)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"role":"assistant","content":` + tt.want + `}`
			if string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// historyTTL never puts a 1h breakpoint after a 5m one, and none on a
// prefix under the minimum.
func TestHistoryTTLRules(t *testing.T) {
	paused := windowRecord{Gaps: 10, Pauses: 5}
	if got := historyTTL(TTL1h, TTL5m, 5000, 5000, 10, 1024, paused); got != TTL5m {
		t.Errorf("1h after a 5m static breakpoint: got %q", got)
	}
	if got := historyTTL(TTLAuto, "", 1000, 1000, 10, 1024, paused); got != "" {
		t.Errorf("under the minimum: got %q", got)
	}
	if got := historyTTL(TTLAuto, TTL1h, 5000, 3000, 100, 1024, paused); got != TTL1h {
		t.Errorf("a person who pauses half the time: got %q, want 1h", got)
	}
	if got := historyTTL(TTLAuto, TTL1h, 5000, 3000, 300, 1024, windowRecord{Gaps: 30}); got != TTL5m {
		t.Errorf("a person who never pauses: got %q, want 5m", got)
	}
}

// planWindow continues the last turn's window, starts an unknown one at
// the first stored turn, and counts the gap before the message.
func TestPlanWindow(t *testing.T) {
	now := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	o, err := WindowOptions{}.resolve(10)
	if err != nil {
		t.Fatal(err)
	}
	turns := func(n int, last string) []conversation.Turn {
		out := make([]conversation.Turn, n)
		for i := range out {
			out[i] = conversation.Turn{Messages: []conversation.Message{conversation.UserText("q"), conversation.UserText("a")}}
		}
		if last != "" {
			out[n-1].Extra = map[string]json.RawMessage{windowKey: json.RawMessage(last)}
		}
		return out
	}
	tests := []struct {
		name       string
		turns      []conversation.Turn
		gap        time.Duration
		wantStart  int
		wantJumped bool
		wantRec    windowRecord
	}{
		{"no record: all the stored turns, as before", turns(6, ""), time.Minute, 0, true, windowRecord{Gaps: 1}},
		{"not ours: the same", turns(6, `"x"`), time.Minute, 0, true, windowRecord{Gaps: 1}},
		{"a negative count is not ours", turns(6, `{"turns":-3}`), time.Minute, 0, true, windowRecord{Gaps: 1}},
		{"continues", turns(6, `{"turns":3,"gaps":4,"pauses":1}`), time.Minute, 2, false, windowRecord{Turns: 3, Gaps: 5, Pauses: 1}},
		{"a pause is counted", turns(6, `{"turns":3,"gaps":4,"pauses":1}`), 6 * time.Minute, 2, false, windowRecord{Turns: 3, Gaps: 5, Pauses: 2}},
		{"the first turn was dropped: jump", turns(10, `{"turns":10}`), time.Minute, 7, true, windowRecord{Turns: 10, Gaps: 1}},
		{"counts are halved", turns(3, `{"turns":1,"gaps":31,"pauses":9}`), time.Minute, 1, false, windowRecord{Turns: 1, Gaps: 16, Pauses: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := conversation.Conversation{Turns: tt.turns, LastActive: now.Add(-tt.gap)}
			w := planWindow(c, now, o)
			if w.start != tt.wantStart || w.jumped != tt.wantJumped || w.rec != tt.wantRec {
				t.Errorf("start %d, jumped %v, record %+v; want %d, %v, %+v", w.start, w.jumped, w.rec, tt.wantStart, tt.wantJumped, tt.wantRec)
			}
		})
	}
}

// Whatever a store holds in a turn's "window" key (a file edited by hand,
// another program's key of the same name), the window starts at a stored
// turn and the request stays valid.
func FuzzPlanWindow(f *testing.F) {
	for _, seed := range []string{`{"turns":3}`, `{"turns":99,"gaps":-1}`, `{"turns":2,"prompt_tokens":5,"prompt_bytes":-7}`, `"x"`, `null`, `{"turns":1e30}`, `{"gaps":9223372036854775807,"turns":0}`} {
		f.Add(seed, 5, int64(90))
	}
	o, err := WindowOptions{}.resolve(10)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, rec string, n int, gapSeconds int64) {
		n = 1 + (n%10+10)%10
		turns := make([]conversation.Turn, n)
		for i := range turns {
			turns[i] = conversation.Turn{Messages: []conversation.Message{conversation.UserText("q"), conversation.UserText("a")}}
		}
		turns[n-1].Extra = map[string]json.RawMessage{windowKey: json.RawMessage(rec)}
		c := conversation.Conversation{Turns: turns, LastActive: now.Add(-time.Duration(gapSeconds) * time.Second)}
		w := planWindow(c, now, o)
		if w.start < 0 || w.start > n || n-w.start > o.MaxTurns {
			t.Fatalf("record %s: start %d of %d turns", rec, w.start, n)
		}
		if w.rec.Gaps < 0 || w.rec.Gaps > maxGaps || w.rec.Pauses < 0 || w.rec.Pauses > w.rec.Gaps {
			t.Fatalf("record %s: counts %+v", rec, w.rec)
		}
		if w.tokensPerByte < 0.2 || w.tokensPerByte > 1 {
			t.Fatalf("record %s: %v tokens per byte", rec, w.tokensPerByte)
		}
		if _, err := w.recordFor(1, 1, TTL5m); err != nil {
			t.Fatal(err)
		}
	})
}
