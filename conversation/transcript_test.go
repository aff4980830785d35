package conversation_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
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

// TestWriteConversation: the heading says whose conversation it is, its
// turns in words ("1 turn", "2 turns"), its last activity in local time
// with the zone, and its state; each turn follows under its number.
func TestWriteConversation(t *testing.T) {
	at := time.Date(2026, 2, 24, 9, 30, 0, 0, time.UTC)
	zone := at.Local().Format("MST")
	one := conversation.Conversation{Phone: "+14155551234", LastActive: at, Turns: []conversation.Turn{{Messages: storetest.TextTurn("hi", "hello")}}}
	two := conversation.Conversation{Phone: "+14155555678", Turns: []conversation.Turn{{Messages: storetest.TextTurn("a", "b")}, {Messages: storetest.TextTurn("c", "d")}}}
	tests := []struct {
		c       conversation.Conversation
		expired bool
		want    []string
	}{
		{one, false, []string{"Conversation with +14155551234: 1 turn, last active " + at.Local().Format("2006-01-02 15:04:05") + " " + zone + " (active)\n", "\n--- turn 1 ---\nuser: hi\n", "assistant: hello\n"}},
		{two, true, []string{": 2 turns, last active unknown (expired: the next message starts a new conversation)", "--- turn 2 ---\nuser: c\n"}},
	}
	for _, tt := range tests {
		var b strings.Builder
		conversation.WriteConversation(&b, tt.c, tt.expired)
		for _, want := range tt.want {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: lacks %q:\n%s", tt.c.Phone, want, b.String())
			}
		}
	}
}

// TestWriteConversationIn: the last activity is written in the zone
// asked for, with its abbreviation.
func TestWriteConversationIn(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	c := conversation.Conversation{Phone: "+14155551234", LastActive: time.Date(2026, 2, 24, 17, 30, 0, 0, time.UTC), Turns: []conversation.Turn{{Messages: storetest.TextTurn("hi", "hello")}}}
	var b strings.Builder
	conversation.WriteConversationIn(&b, c, false, la)
	if want := "last active 2026-02-24 09:30:00 PST (active)"; !strings.Contains(b.String(), want) {
		t.Errorf("lacks %q:\n%s", want, b.String())
	}
}

// TestWriteSummaries: one row a conversation, numbers masked unless full.
func TestWriteSummaries(t *testing.T) {
	sums := []conversation.Summary{{Phone: "+14155551234", Turns: 3}, {Phone: "+14155555678", Turns: 1, Expired: true, LastActive: time.Now()}}
	var masked, full strings.Builder
	if err := conversation.WriteSummaries(&masked, sums, false); err != nil {
		t.Fatal(err)
	}
	conversation.WriteSummaries(&full, sums, true)
	lines := strings.Split(strings.TrimSpace(masked.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "PHONE") || !strings.Contains(lines[1], "+*******1234") || !strings.Contains(lines[1], "unknown") ||
		!strings.HasSuffix(lines[1], "active") || !strings.HasSuffix(lines[2], "expired") {
		t.Errorf("masked table:\n%s", masked.String())
	}
	if strings.Contains(masked.String(), "4155551234") || !strings.Contains(full.String(), "+14155551234") {
		t.Errorf("masking: masked\n%s\nfull\n%s", masked.String(), full.String())
	}
}

// TestMemoryShow: a stored conversation is shown for a person to read, or
// as the JSON that would be sent now; an expired one is shown as expired,
// sends nothing, and stays stored; an unknown phone is ErrNotFound.
func TestMemoryShow(t *testing.T) {
	clock := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	store := memstore.New()
	mem, err := conversation.New(store, &conversation.Options{Timeout: time.Hour, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	const erin = "+14155551234"
	if err := mem.SaveTurn(ctx, erin, storetest.TextTurn("hi", "hello")); err != nil {
		t.Fatal(err)
	}
	show := func(asJSON bool) string {
		t.Helper()
		var b strings.Builder
		if err := mem.Show(ctx, &b, erin, asJSON); err != nil {
			t.Fatalf("Show(json %v): %v", asJSON, err)
		}
		return b.String()
	}
	if got := show(false); !strings.Contains(got, "1 turn") || !strings.Contains(got, "(active)") || !strings.Contains(got, "user: hi\n") {
		t.Errorf("active transcript:\n%s", got)
	}
	if got, want := show(true), `[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"hello"}]}]`+"\n"; got != want {
		t.Errorf("active JSON %q, want %q", got, want)
	}
	clock = clock.Add(2 * time.Hour)
	if got := show(false); !strings.Contains(got, "expired") || !strings.Contains(got, "user: hi\n") {
		t.Errorf("expired transcript:\n%s", got)
	}
	if got := show(true); got != "[]\n" {
		t.Errorf("expired JSON %q, want nothing to send", got)
	}
	if _, err := store.Get(ctx, conversation.Conversations, erin); err != nil {
		t.Errorf("after showing an expired conversation, Load: %v; want it still stored", err)
	}
	if err := mem.Show(ctx, &strings.Builder{}, "+14155550000", false); !errors.Is(err, conversation.ErrNotFound) {
		t.Errorf("an unknown phone: %v, want ErrNotFound", err)
	}
}
