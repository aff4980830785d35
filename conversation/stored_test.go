package conversation_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
)

// storedTurns are turns whose stored bytes ParseStoredTurn must split back
// into the same turn: escapes, quotes and brackets inside strings, nested
// content, extra keys of messages and of the turn.
var storedTurns = []conversation.Turn{
	{Messages: []conversation.Message{conversation.UserText("hi")}},
	{Messages: []conversation.Message{
		msg("user", `"caf\u00e9 <b>&</b> \"quotes\" \\ back\\\\slash \" ] } [ { , : \ud83c\udf2e 🌮"`),
		msg("assistant", `[{"type":"text","text":"a \"b\" ]}"},{"type":"tool_use","id":"toolu_1","name":"t","input":{"a":[1,2.5e3,{"b":null}],"c":true,"d":"}\\"}}]`),
		{Role: "user", Content: json.RawMessage(`[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok","is_error":false}]`),
			Extra: map[string]json.RawMessage{"sent_at": json.RawMessage(`"2026"`), "n": json.RawMessage(`12`), "z\"q": json.RawMessage(`[]`)}},
		msg("assistant", `"done"`),
	}, Extra: map[string]json.RawMessage{"usage": json.RawMessage(`{"input_tokens":12}`), "flag": json.RawMessage(`true`), "x": json.RawMessage(`-1.5`)}},
}

func TestParseStoredTurnGivesBackWhatWasSaved(t *testing.T) {
	for i, want := range storedTurns {
		data, err := want.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := conversation.ParseStoredTurn(bytes.Clone(data))
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		again, _ := got.MarshalJSON()
		if !bytes.Equal(again, data) {
			t.Fatalf("turn %d: parsed turn encodes to\n%s\nwant\n%s", i, again, data)
		}
		if len(got.Messages) != len(want.Messages) {
			t.Fatalf("turn %d: %d messages, want %d", i, len(got.Messages), len(want.Messages))
		}
		for j := range got.Messages {
			if !got.Messages[j].Equal(want.Messages[j]) {
				t.Fatalf("turn %d message %d = %s, want %s", i, j, got.Messages[j].Content, want.Messages[j].Content)
			}
			if c := got.Messages[j].Content; cap(c) != len(c) {
				t.Fatalf("turn %d message %d: content capacity %d beyond its length %d", i, j, cap(c), len(c))
			}
		}
		var decoded conversation.Turn
		if err := json.Unmarshal(data, &decoded); err != nil {
			t.Fatal(err)
		}
		if dj, _ := decoded.MarshalJSON(); !bytes.Equal(dj, data) {
			t.Fatalf("turn %d: json.Unmarshal and ParseStoredTurn disagree", i)
		}
	}
}

func TestParseStoredTurns(t *testing.T) {
	var arr []byte
	arr = append(arr, '[')
	for i, turn := range storedTurns {
		if i > 0 {
			arr = append(arr, ',')
		}
		data, _ := turn.MarshalJSON()
		arr = append(arr, data...)
	}
	arr = append(arr, ']')
	got, err := conversation.ParseStoredTurns(arr)
	if err != nil || len(got) != len(storedTurns) {
		t.Fatalf("ParseStoredTurns = %d turns, %v; want %d", len(got), err, len(storedTurns))
	}
	for i := range got {
		a, _ := got[i].MarshalJSON()
		b, _ := storedTurns[i].MarshalJSON()
		if !bytes.Equal(a, b) {
			t.Fatalf("turn %d = %s, want %s", i, a, b)
		}
	}
	if got, err := conversation.ParseStoredTurns([]byte(`[]`)); err != nil || len(got) != 0 {
		t.Fatalf("ParseStoredTurns([]) = %v, %v", got, err)
	}
	for _, bad := range []string{``, `[`, `[{"messages":[{"role":"user","content":"a"}]}`, `[{"messages":[{"role":"user","content":"a"}]}{"messages":[{"role":"user","content":"a"}]}]`} {
		if _, err := conversation.ParseStoredTurns([]byte(bad)); err == nil {
			t.Errorf("ParseStoredTurns(%q) succeeded", bad)
		}
	}
}

// TestParseStoredTurnRefusesOtherShapes: bytes not written by
// Turn.MarshalJSON are refused, for the caller to decode and validate.
func TestParseStoredTurnRefusesOtherShapes(t *testing.T) {
	for _, in := range []string{
		``,
		`{}`,
		`{"messages":[]}`,
		`{ "messages": [{"role":"user","content":"hi"}]}`,
		`{"messages":[{"content":"hi","role":"user"}]}`,
		`{"messages":[{"role":"user","content":"hi"}]`,
		`{"messages":[{"role":"user","content":"hi"}]}x`,
		`{"messages":[{"role":"user","content":"hi}]}`,
		`{"messages":[{"role":"user","content":"hi"}{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":}]}`,
		`{"messages":[{"role":"user","content":[{"a":1}]]}`,
	} {
		if _, err := conversation.ParseStoredTurn([]byte(in)); err == nil {
			t.Errorf("ParseStoredTurn(%q) succeeded, want an error", in)
		}
	}
}

// FuzzParseStoredTurn: on any input ParseStoredTurn does not panic, and on
// the stored form of any turn that decodes it gives back that turn.
func FuzzParseStoredTurn(f *testing.F) {
	for _, t := range storedTurns {
		data, _ := t.MarshalJSON()
		f.Add(data)
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":"a\\"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		conversation.ParseStoredTurn(bytes.Clone(data))
		var turn conversation.Turn
		if json.Unmarshal(data, &turn) != nil || len(turn.Messages) == 0 {
			return
		}
		stored, err := turn.MarshalJSON()
		if err != nil {
			return
		}
		got, err := conversation.ParseStoredTurn(bytes.Clone(stored))
		if err != nil {
			t.Fatalf("ParseStoredTurn(%s): %v", stored, err)
		}
		if again, _ := got.MarshalJSON(); !bytes.Equal(again, stored) {
			t.Fatalf("round trip:\n%s\nwant\n%s", again, stored)
		}
	})
}

func TestKeptTurnsAndToolUseIDs(t *testing.T) {
	turn := conversation.Turn{Messages: []conversation.Message{
		conversation.UserText("go"),
		msg("assistant", `[{"type":"text","text":"the word \"tool_use\""},{"type":"tool_use","id":"a","name":"t","input":{}},{"type":"tool_use","id":"b","name":"t","input":{}}]`),
		msg("user", `[{"type":"tool_result","tool_use_id":"a","content":"r"},{"type":"tool_result","tool_use_id":"b","content":"r"}]`),
	}}
	if got := turn.ToolUseIDs(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("ToolUseIDs = %q, want [a b]", got)
	}
	spaced := conversation.Turn{Messages: []conversation.Message{msg("assistant", "[ {\"type\": \"tool_use\", \"id\": \"s\", \"name\": \"t\", \"input\": {}} ]")}}
	if got := spaced.ToolUseIDs(); len(got) != 1 || got[0] != "s" {
		t.Fatalf("ToolUseIDs of spaced content = %q, want [s]", got)
	}
	if got := (conversation.Turn{Messages: []conversation.Message{conversation.UserText("tool_use")}}).ToolUseIDs(); got != nil {
		t.Fatalf("ToolUseIDs of a text turn = %q", got)
	}
	if err := conversation.CheckToolIDs([]string{"c", "b"}, []string{"a", "b"}); err == nil {
		t.Fatal("CheckToolIDs let a reused id through")
	}
	last := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	lim := conversation.Limits{Timeout: time.Hour, MaxTurns: 3}
	for _, c := range []struct {
		n    int
		now  time.Time
		lim  conversation.Limits
		want int
	}{
		{5, last, lim, 2},
		{1, last, lim, 1},
		{0, last, lim, 0},
		{5, last.Add(time.Hour + 1), lim, 0},
		{5, last, conversation.Limits{Timeout: time.Hour}, 5},
	} {
		if got := conversation.KeptTurns(c.n, last, c.now, c.lim); got != c.want {
			t.Errorf("KeptTurns(%d, +%v, %+v) = %d, want %d", c.n, c.now.Sub(last), c.lim, got, c.want)
		}
	}
}
