package conversation_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storetest"
)

// TestWriteTranscript: each kind of block is written for a person to read,
// multi-line text indented under its speaker.
func TestWriteTranscript(t *testing.T) {
	msgs := storetest.ToolTurn("find chicken", "toolu_1", "1. lemon\n2. garlic", "Here are two.")
	msgs = append(msgs,
		conversation.NewMessage(conversation.RoleUser, json.RawMessage(`{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}`)),
		conversation.NewMessage(conversation.RoleAssistant, json.RawMessage(`{"type":"thinking","thinking":"hm","signature":"s"}`), json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}`)),
	)
	var b strings.Builder
	conversation.WriteTranscript(&b, msgs)
	got := b.String()
	for _, want := range []string{
		"user: find chicken\n",
		"  -> tool search ",
		"  <- result: 1. lemon\n    2. garlic\n",
		"assistant: Here are two.\n",
		"user: [image]\n",
		"  (thinking)\n",
		"  [server_tool_use block]\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
}

// TestMarshalMessages: the array holds each message's own bytes, so that
// what history show --json prints is what a request carries.
func TestMarshalMessages(t *testing.T) {
	msgs := storetest.TextTurn("a <b> & c", "ok")
	data, err := conversation.MarshalMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(data, &parts); err != nil || len(parts) != 2 {
		t.Fatalf("not an array of 2: %s (%v)", data, err)
	}
	for i, m := range msgs {
		want, _ := m.MarshalJSON()
		if string(parts[i]) != string(want) {
			t.Errorf("message %d = %s, want %s", i, parts[i], want)
		}
	}
	if empty, _ := conversation.MarshalMessages(nil); string(empty) != "[]" {
		t.Errorf("no messages = %s, want []", empty)
	}
}
