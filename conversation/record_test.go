package conversation

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestEncodedSize: encodedSize is at least the length of what
// encodeConversation writes, so that its buffer is never grown.
func TestEncodedSize(t *testing.T) {
	tool := func(i int) Turn {
		id := fmt.Sprintf("toolu_%d", i)
		return Turn{Messages: []Message{
			UserText("find a recipe"),
			NewMessage(RoleAssistant, TextBlock("Looking."), json.RawMessage(`{"type":"tool_use","id":"`+id+`","name":"search","input":{}}`)),
			NewMessage(RoleUser, json.RawMessage(`{"type":"tool_result","tool_use_id":"`+id+`","content":"`+strings.Repeat("r", 2000)+`"}`)),
			NewMessage(RoleAssistant, TextBlock("Here.")),
		}}
	}
	extra := map[string]json.RawMessage{"usage": json.RawMessage(`{"input_tokens":12}`), "z": json.RawMessage(`null`)}
	at := time.Date(2026, 2, 24, 10, 35, 0, 123456000, time.UTC)
	for _, c := range []struct {
		name string
		conv Conversation
	}{
		{"empty", Conversation{LastActive: at}},
		{"no last_active", Conversation{Turns: []Turn{tool(0)}}},
		{"unreadable last_active", Conversation{rawTime: json.RawMessage(`"yesterday at noon"`), Turns: []Turn{tool(0)}}},
		{"ten tool turns", Conversation{LastActive: at, Turns: func() []Turn {
			var turns []Turn
			for i := range 10 {
				turns = append(turns, tool(i))
			}
			return turns
		}()}},
		{"text turns", Conversation{LastActive: at, Turns: []Turn{
			{Messages: []Message{UserText("hi"), {Role: RoleAssistant, Content: json.RawMessage(`"hello"`)}}},
			{Messages: []Message{UserText("a"), {Role: RoleAssistant, Content: json.RawMessage(`"b"`)}}},
		}}},
		{"extra keys everywhere", Conversation{LastActive: at, Extra: extra, Turns: []Turn{
			{Messages: []Message{{Role: RoleUser, Content: json.RawMessage(`"hi"`), Extra: extra}}, Extra: extra},
		}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, err := encodeConversation(c.conv, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodedSize(c.conv); got < len(data) {
				t.Errorf("encodedSize = %d, want at least the %d bytes written", got, len(data))
			}
		})
	}
}
