package conversation

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"
)

// unmarshalConversation decodes a stored conversation the plain way, each
// level with json.Unmarshal and the types' own UnmarshalJSON: what
// decodeConversation must give, read a level at a time.
func unmarshalConversation(rec Record, loc *time.Location) (c Conversation, dropped int, ok bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(rec.Data, &obj); err != nil || obj == nil {
		return Conversation{}, 0, false
	}
	c = Conversation{Phone: rec.Key, Version: rec.Version}
	if raw, ok := obj["last_active"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			c.LastActive, _ = parseTime(s, loc)
		}
		if c.LastActive.IsZero() {
			c.rawTime = compact(raw)
		}
	}
	var rawTurns []json.RawMessage
	if raw, ok := obj["turns"]; ok && json.Unmarshal(raw, &rawTurns) != nil {
		dropped++
	}
	var turns []Turn
	for _, rt := range rawTurns {
		var t Turn
		if json.Unmarshal(rt, &t) != nil {
			dropped++
			continue
		}
		turns = append(turns, t)
	}
	kept, invalid := repair(turns)
	c.Turns = kept
	delete(obj, "last_active")
	delete(obj, "turns")
	c.Extra = compactExtra(obj)
	return c, dropped + invalid, true
}

func sameExtra(a, b map[string]json.RawMessage) bool {
	return maps.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}

// FuzzDecodeConversation: decodeConversation reads any record as
// unmarshalConversation does, good or broken, and every turn it keeps
// carries its tool_use ids.
func FuzzDecodeConversation(f *testing.F) {
	good := `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"n","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]},{"role":"assistant","content":"done"}],"usage":{"in":1}}`
	for _, seed := range []string{
		`{"last_active":"2026-02-24T10:35:00.123456","turns":[` + good + `]}`,
		`{"last_active":"2026-02-24T10:35:00","turns":[` + good + `,` + good + `],"z":1,"a":[1, 2]}`,
		` { "turns" : [ {"messages" : [ {"role" : "user", "content" : [ {"type":"text","text":"a  b"} ] , "x" : { "y" : 1 } } ] } ] , "last_active" : null } `,
		`{"turns":null}`, `{"turns":{}}`, `{"turns":"x"}`, `{"turns":[1,null,"x",[],{}]}`,
		`{"turns":[{"messages":null},{"messages":[]},{"messages":[null]},{"messages":{}}]}`,
		`{"turns":[{"messages":[{"role":null,"content":"x"}]},{"messages":[{"role":1,"content":"x"}]},{"messages":[{"content":"x"}]},{"messages":[{"role":"user"}]}]}`,
		`{"turns":[{"messages":[{"role":"user","content":"x"}],"messages":[{"role":"user","content":"y"}]}],"turns":[{"messages":[{"role":"user","content":"z","role":"user"}]}]}`,
		`{"turns":[{"messages":[{"role":"user","content":"x"}],"messages":5}]}`,
		`{"turns":[{"messages":[{"role":"user","content":"x"}]}]} {}`,
		`{"turns":[{"messages":[{"r\u006fle":"user","content":"x"}]}],"last_active":5}`,
		`{"Turns":[{"Messages":[{"Role":"user","Content":"x"}]}]}`,
		`{"turns":[` + good + `,` + good + `]}`,
		`null`, `[]`, `"x"`, `{`, `{"turns":[}`, `{}`, `{"last_active":"nope"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := Record{Key: "+1", Data: data, Version: 3}
		got, gotDropped, err := decodeConversation("+1", rec, time.UTC)
		want, wantDropped, ok := unmarshalConversation(rec, time.UTC)
		if (err == nil) != ok {
			t.Fatalf("error %v, want one: %v", err, !ok)
		}
		if !ok {
			return
		}
		if gotDropped != wantDropped {
			t.Errorf("dropped %d, want %d", gotDropped, wantDropped)
		}
		if got.Phone != want.Phone || got.Version != want.Version || !got.LastActive.Equal(want.LastActive) ||
			!bytes.Equal(got.rawTime, want.rawTime) || !sameExtra(got.Extra, want.Extra) {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
		if got.Turns == nil || len(got.Turns) != len(want.Turns) {
			t.Fatalf("%d turns, want %d", len(got.Turns), len(want.Turns))
		}
		for i, g := range got.Turns {
			w := want.Turns[i]
			if !slices.EqualFunc(g.Messages, w.Messages, Message.Equal) || !sameExtra(g.Extra, w.Extra) {
				t.Errorf("turn %d: got %+v\nwant %+v", i, g, w)
			}
			if g.checked == nil || !slices.Equal(g.checked.toolUseIDs, w.ToolUseIDs()) {
				t.Errorf("turn %d: checked %+v, want the ids %q", i, g.checked, w.ToolUseIDs())
			}
		}
	})
}
