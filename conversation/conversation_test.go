package conversation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
)

var ctx = context.Background()

func msg(role, content string) conversation.Message {
	return conversation.Message{Role: role, Content: json.RawMessage(content)}
}

func TestValidateTurnMessages(t *testing.T) {
	use := msg("assistant", `[{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]`)
	tests := []struct {
		name string
		turn []conversation.Message
		want string // "" for valid, else a part of the error
	}{
		{"text", []conversation.Message{msg("user", `"hi"`), msg("assistant", `"hello"`)}, ""},
		{"ends on tool results", []conversation.Message{msg("user", `"go"`), use, msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"},{"type":"text","text":"more"}]`)}, ""},
		{"unknown blocks pass", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"thinking","thinking":"x","signature":"s"},{"type":"text","text":"ok"}]`)}, ""},
		{"first not user", []conversation.Message{msg("assistant", `"hi"`)}, "messages.0: the first message must use the \"user\" role"},
		{"missing result", []conversation.Message{msg("user", `"go"`), use, msg("user", `"no result"`)}, "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"},
		{"orphan result", []conversation.Message{msg("user", `[{"type":"tool_result","tool_use_id":"toolu_9","content":"r"}]`)}, "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9"},
		{"duplicate result", []conversation.Message{msg("user", `"go"`), use, msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"},{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]`)}, "unexpected `tool_use_id`"},
		{"result after text", []conversation.Message{msg("user", `"go"`), use, msg("user", `[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]`)}, "must come before any other content"},
		{"tool_use from user", []conversation.Message{msg("user", `[{"type":"tool_use","id":"a","name":"t","input":{}}]`)}, "only allowed in assistant messages"},
		{"duplicate ids", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"tool_use","id":"a","name":"t","input":{}},{"type":"tool_use","id":"a","name":"t","input":{}}]`)}, "ids must be unique"},
		{"empty text", []conversation.Message{msg("user", `[{"type":"text","text":""}]`)}, "content.0: text content blocks must contain non-whitespace text"},
		{"empty content", []conversation.Message{msg("user", `[]`)}, "non-empty content"},
		{"empty text in a tool_result", []conversation.Message{msg("user", `"go"`), use, msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok"},{"type":"text","text":" "}]}]`)}, "content.0.content.1: text content blocks must contain non-whitespace text"},
		{"untyped block in a tool_result", []conversation.Message{msg("user", `"go"`), use, msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"text":"ok"}]}]`)}, "content.0.content.0"},
		{"tool_result content an object", []conversation.Message{msg("user", `"go"`), use, msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":{"text":"ok"}}]`)}, "must be a string or an array"},
		{"tool_result content blocks", []conversation.Message{msg("user", `"go"`), use, msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok"},{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]},{"type":"text","text":"more"}]`)}, ""},
		{"tool_result without content", []conversation.Message{msg("user", `"go"`), use, msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1"}]`)}, ""},
		{"tool_use input a string", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"tool_use","id":"a","name":"t","input":"{}"}]`)}, "content.0.input: tool_use input must be a JSON object"},
		{"tool_use input an array", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"tool_use","id":"a","name":"t","input":[]}]`)}, "tool_use input must be a JSON object"},
		{"tool_use without input", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"tool_use","id":"a","name":"t"}]`)}, "tool_use input must be a JSON object"},
		{"bad role", []conversation.Message{msg("user", `"a"`), msg("tool", `"b"`)}, `role must be "user" or "assistant"`},
		// Valid shapes of the API's blocks whose fields differ in type from
		// the blocks the rules look at: a search_result's "source" is a
		// string URL, not an object.
		{"search_result in a tool_result", []conversation.Message{msg("user", `"go"`), use, msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"search_result","source":"https://example.com/a","title":"A","content":[{"type":"text","text":"a fact"}],"citations":{"enabled":true}}]}]`)}, ""},
		{"search_result at top level", []conversation.Message{msg("user", `[{"type":"search_result","source":"https://example.com/a","title":"A","content":[{"type":"text","text":"a fact"}]},{"type":"text","text":"what does it say?"}]`)}, ""},
		{"thinking and redacted_thinking", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"EmwK"},{"type":"text","text":"ok"}]`)}, ""},
		{"server tool blocks", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://example.com","title":"T","encrypted_content":"e","page_age":null}]},{"type":"server_tool_use","id":"srvtoolu_2","name":"web_search","input":{"query":"q2"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_2","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}},{"type":"text","text":"ok"}]`)}, ""},
		// Server tools: each call answered by its result after it, in the
		// same assistant content, or, made alongside a client call, in a
		// later assistant message of the turn.
		{"server call answered after a client round", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}},{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]`), msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]`), msg("assistant", `[{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"ok"}]`)}, ""},
		{"unanswered server call (a paused turn)", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"text","text":"searching"},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}]`)}, "server tool calls without a result in the turn: srvtoolu_1"},
		{"server result answering nothing", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"web_search_tool_result","tool_use_id":"srvtoolu_9","content":[]},{"type":"text","text":"ok"}]`)}, `answers "srvtoolu_9"`},
		{"server result before its call", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}]`)}, `answers "srvtoolu_1"`},
		{"server result twice", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}]`)}, `content.2: web_search_tool_result answers "srvtoolu_1"`},
		{"server call from the user", []conversation.Message{msg("user", `[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}]`)}, "server_tool_use blocks are only allowed in assistant messages"},
		{"server call without id", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"server_tool_use","name":"web_search","input":{}}]`)}, "server_tool_use needs an id"},
		{"server call ids unique", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"server_tool_use","id":"s","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"s","content":[]},{"type":"server_tool_use","id":"s","name":"web_search","input":{}}]`)}, "ids must be unique"},
		{"mcp call and result", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"mcp_tool_use","id":"mcptoolu_1","name":"echo","server_name":"s","input":{}},{"type":"mcp_tool_result","tool_use_id":"mcptoolu_1","is_error":false,"content":[{"type":"text","text":"hi"}]},{"type":"text","text":"ok"}]`)}, ""},
		{"documents of every source", []conversation.Message{msg("user", `[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain"}},{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"}},{"type":"document","source":{"type":"content","content":[{"type":"text","text":"inline"}]},"title":"T","citations":{"enabled":true}},{"type":"document","source":{"type":"file","file_id":"file_1"}},{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},{"type":"text","text":"read these"}]`)}, ""},
		{"tool_result content forms", []conversation.Message{msg("user", `"go"`), msg("assistant", `[{"type":"tool_use","id":"a","name":"t","input":{}},{"type":"tool_use","id":"b","name":"t","input":{}},{"type":"tool_use","id":"c","name":"t","input":{}}]`), msg("user", `[{"type":"tool_result","tool_use_id":"a","content":"r"},{"type":"tool_result","tool_use_id":"b","content":[]},{"type":"tool_result","tool_use_id":"c","is_error":true}]`)}, ""},
		{"image with a string source", []conversation.Message{msg("user", `[{"type":"image","source":"https://example.com/a.png"}]`)}, "content: block 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := conversation.ValidateTurn(tt.turn)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("valid turn rejected: %v", err)
				}
				return
			}
			if !errors.Is(err, conversation.ErrInvalidTurn) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInvalidTurn saying %q", err, tt.want)
			}
		})
	}
}

func TestRepairDropsOnlyBrokenTurns(t *testing.T) {
	good := func(id string) conversation.Turn {
		return conversation.Turn{Messages: []conversation.Message{
			msg("user", `"go"`),
			msg("assistant", `[{"type":"tool_use","id":"`+id+`","name":"t","input":{}}]`),
			msg("user", `[{"type":"tool_result","tool_use_id":"`+id+`","content":"r"}]`),
		}}
	}
	broken := conversation.Turn{Messages: []conversation.Message{msg("user", `""`)}}
	kept, dropped := conversation.Repair([]conversation.Turn{good("a"), broken, good("b"), good("a")})
	if len(kept) != 2 || dropped != 2 {
		t.Fatalf("kept %d, dropped %d; want 2 and 2 (one empty, one reusing an id)", len(kept), dropped)
	}
	if err := conversation.ValidateTurn(conversation.Conversation{Turns: kept}.Messages()); err != nil {
		t.Fatalf("repaired history is not valid: %v", err)
	}
}

func TestSanitizeKeepsOtherBytes(t *testing.T) {
	in := msg("user", `[ {"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"AAAA"}},{"type":"text","text":"<ok> \u00e9"}],"is_error":true,"zzz":[1,2]} ]`)
	out, err := conversation.Sanitize(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"[Image sent: photo]"},{"type":"text","text":"<ok> \u00e9"}],"is_error":true,"zzz":[1,2]}]`
	if string(out.Content) != want {
		t.Fatalf("got  %s\nwant %s", out.Content, want)
	}
}

// TestSanitizeSearchResult: a search_result block, whose "source" is a
// string, is kept byte for byte by Sanitize, at top level and inside a
// tool_result whose images are replaced.
func TestSanitizeSearchResult(t *testing.T) {
	sr := `{"type":"search_result","source":"https://example.com/a","title":"A","content":[{"type":"text","text":"a fact"}],"citations":{"enabled":true}}`
	in := msg("user", `[{"type":"tool_result","tool_use_id":"t","content":[`+sr+`,{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]},`+sr+`]`)
	out, err := conversation.Sanitize(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"tool_result","tool_use_id":"t","content":[` + sr + `,{"type":"text","text":"[Image sent: photo]"}]},` + sr + `]`
	if string(out.Content) != want {
		t.Fatalf("got  %s\nwant %s", out.Content, want)
	}
}

func TestMessageJSONRoundTrip(t *testing.T) {
	var m conversation.Message
	if err := json.Unmarshal([]byte(`{"content": [ {"type":"text","text":"a  <b>"} ], "role":"user", "extra": 1}`), &m); err != nil {
		t.Fatal(err)
	}
	b, err := m.MarshalJSON() // json.Marshal would add HTML escapes
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"role":"user","content":[{"type":"text","text":"a  <b>"}]}`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if err := json.Unmarshal([]byte(`{"role":"user"}`), &m); err == nil {
		t.Fatal("a message without content was accepted")
	}
}

// TestMessageExtraStoredNotSent: keys of a message object other than role
// and content are kept in the stored form (a turn), byte-stable, and left
// out of the form sent to the API (MarshalJSON).
func TestMessageExtraStoredNotSent(t *testing.T) {
	in := `{"messages":[{"content":"hi","role":"user","sent_at": "2026-02-24T10:35:00","name":"Erin"}],"usage":{"input_tokens":3}}`
	var turn conversation.Turn
	if err := json.Unmarshal([]byte(in), &turn); err != nil {
		t.Fatal(err)
	}
	stored, err := turn.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"user","content":"hi","name":"Erin","sent_at":"2026-02-24T10:35:00"}],"usage":{"input_tokens":3}}`
	if string(stored) != want {
		t.Fatalf("stored turn:\ngot  %s\nwant %s", stored, want)
	}
	var again conversation.Turn
	if err := json.Unmarshal(stored, &again); err != nil {
		t.Fatal(err)
	}
	if b, _ := again.MarshalJSON(); string(b) != want {
		t.Fatalf("a stored turn read and written again changed:\ngot  %s\nwant %s", b, want)
	}
	if !again.Messages[0].Equal(turn.Messages[0]) {
		t.Fatal("the message read back is not Equal to the one written")
	}
	sent, err := again.Messages[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(sent) != `{"role":"user","content":"hi"}` {
		t.Fatalf("the form sent to the API keeps extra keys: %s", sent)
	}
	clone := again.Clone()
	clone.Messages[0].Extra["name"][1] = 'X'
	if string(again.Messages[0].Extra["name"]) != `"Erin"` {
		t.Fatal("Clone shares the extra keys' bytes")
	}
	if clone.Messages[0].Equal(again.Messages[0]) {
		t.Fatal("Equal ignores the extra keys")
	}
}

func TestPhones(t *testing.T) {
	if err := conversation.CheckPhone("+1 415"); err != nil {
		t.Errorf("CheckPhone rejected an inner space: %v", err)
	}
	if err := conversation.CheckPhone("+1\x00"); !errors.Is(err, conversation.ErrInvalidPhone) {
		t.Errorf("CheckPhone accepted a NUL: %v", err)
	}
}

func TestNewRejectsNegativeOptions(t *testing.T) {
	if _, err := conversation.New(memstore.New(), &conversation.Options{MaxTurns: -1}); err == nil {
		t.Fatal("negative max turns accepted")
	}
	if _, err := conversation.New(memstore.New(), &conversation.Options{Timeout: -1}); err == nil {
		t.Fatal("negative timeout accepted")
	}
}

func ExampleMemory() {
	mem, _ := conversation.New(memstore.New(), nil)
	ctx := context.Background()
	// One turn with a tool round, as the assistant saves it.
	mem.SaveTurn(ctx, "+14155551234", []conversation.Message{
		conversation.UserText("[From Erin]: add milk to the grocery list"),
		{Role: "assistant", Content: json.RawMessage(`[{"type":"tool_use","id":"toolu_1","name":"add_items","input":{"list":"grocery","items":["milk"]}}]`)},
		{Role: "user", Content: json.RawMessage(`[{"type":"tool_result","tool_use_id":"toolu_1","content":"Added milk."}]`)},
		conversation.NewMessage("assistant", conversation.TextBlock("Milk is on the list.")),
	})
	history, _ := mem.History(ctx, "+14155551234")
	fmt.Println(len(history), "messages; the last says:", history[3].Text())
	// The system sender is never stored.
	mem.SaveTurn(ctx, conversation.SystemSender, []conversation.Message{conversation.UserText("digest")})
	system, _ := mem.History(ctx, conversation.SystemSender)
	fmt.Println(len(system), "messages for system")
	// Output:
	// 4 messages; the last says: Milk is on the list.
	// 0 messages for system
}

func ExampleValidateTurn() {
	err := conversation.ValidateTurn([]conversation.Message{
		conversation.UserText("go"),
		{Role: "assistant", Content: json.RawMessage(`[{"type":"tool_use","id":"toolu_1","name":"search","input":{}}]`)},
	})
	fmt.Println(errors.Is(err, conversation.ErrInvalidTurn))
	fmt.Println(err)
	// Output:
	// true
	// invalid turn: messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. A turn must not end on an unanswered tool call
}

func TestSaveRejectsReusedToolID(t *testing.T) {
	clock := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	store := memstore.New()
	opts := &conversation.Options{MaxTurns: 2, Now: func() time.Time { return clock }}
	mem, _ := conversation.New(store, opts)
	turn := func(id string) []conversation.Message {
		return []conversation.Message{
			conversation.UserText("go"),
			msg("assistant", `[{"type":"tool_use","id":"`+id+`","name":"t","input":{}}]`),
			msg("user", `[{"type":"tool_result","tool_use_id":"`+id+`","content":"r"}]`),
		}
	}
	if err := mem.SaveTurn(ctx, "+1", turn("a")); err != nil {
		t.Fatal(err)
	}
	if err := mem.SaveTurn(ctx, "+1", turn("a")); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("a reused tool_use id: err = %v, want ErrInvalidTurn", err)
	}
	if err := mem.SaveTurn(ctx, "+1", turn("b")); err != nil {
		t.Fatal(err)
	}
	// With a cap of 2, turn "a" drops out when the next turn is saved, so
	// its id may come back.
	if err := mem.SaveTurn(ctx, "+1", turn("a")); err != nil {
		t.Fatalf("an id of a turn the cap drops was refused: %v", err)
	}
	h, _ := mem.History(ctx, "+1")
	if err := conversation.ValidateTurn(h); err != nil {
		t.Fatal(err)
	}
	// A memory that reads the conversation from the store, rather than
	// from what it saved itself, refuses the ids it holds too.
	fresh, _ := conversation.New(store, opts)
	if err := fresh.SaveTurn(ctx, "+1", turn("a")); !errors.Is(err, conversation.ErrInvalidTurn) {
		t.Fatalf("a reused tool_use id, read from the store: err = %v, want ErrInvalidTurn", err)
	}
}

// TestReplaceCompactsChangedTurns: turns loaded from a store and changed
// before Replace are stored as any turn is, their content compacted.
func TestReplaceCompactsChangedTurns(t *testing.T) {
	store := memstore.New()
	mem, _ := conversation.New(store, nil)
	if err := mem.SaveTurn(ctx, "+1", []conversation.Message{conversation.UserText("hi"), msg("assistant", `"hello"`)}); err != nil {
		t.Fatal(err)
	}
	c, err := mem.Load(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	c.Turns[0].Messages[1].Content = json.RawMessage("[ {\"type\": \"text\", \"text\": \"hello  there\"} ]")
	if err := mem.Replace(ctx, c); err != nil {
		t.Fatal(err)
	}
	rec, err := store.Get(ctx, conversation.Conversations, "+1")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"role":"assistant","content":[{"type":"text","text":"hello  there"}]}`; !strings.Contains(string(rec.Data), want) {
		t.Errorf("stored %s\nwant it to hold %s", rec.Data, want)
	}
}

// TestSaveOverAnotherMemorysWrite: a Memory whose copy of a conversation
// is old (another Memory on the same store wrote or deleted it since)
// neither loses the other's turn nor brings a deleted conversation back.
func TestSaveOverAnotherMemorysWrite(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC) }
	store := memstore.New()
	a, _ := conversation.New(store, &conversation.Options{Now: clock})
	b, _ := conversation.New(store, &conversation.Options{Now: clock})
	save := func(mem *conversation.Memory, text string) {
		t.Helper()
		if err := mem.SaveTurn(ctx, "+1", []conversation.Message{conversation.UserText(text), msg("assistant", `"ok"`)}); err != nil {
			t.Fatal(err)
		}
	}
	texts := func() string {
		t.Helper()
		fresh, _ := conversation.New(store, &conversation.Options{Now: clock})
		h, err := fresh.History(ctx, "+1")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range h {
			if m.Role == conversation.RoleUser && m.IsString() {
				got = append(got, string(m.Content))
			}
		}
		return strings.Join(got, " ")
	}
	save(a, "one")
	save(b, "two")
	save(a, "three") // a's copy holds "one" only
	if got, want := texts(), `"one" "two" "three"`; got != want {
		t.Fatalf("after saves by two memories: %s, want %s", got, want)
	}
	if err := b.Clear(ctx, "+1"); err != nil {
		t.Fatal(err)
	}
	save(a, "four") // a's copy holds the cleared conversation
	if got, want := texts(), `"four"`; got != want {
		t.Fatalf("after another memory cleared it: %s, want %s", got, want)
	}

	// A tool id is refused only when the stored history holds it, not
	// when an old copy does.
	tool := func(text string) []conversation.Message {
		return []conversation.Message{
			conversation.UserText(text),
			msg("assistant", `[{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]`),
			msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]`),
		}
	}
	for _, clear := range []*conversation.Memory{b, a} {
		if err := b.Clear(ctx, "+1"); err != nil && !errors.Is(err, conversation.ErrNotFound) {
			t.Fatal(err)
		}
		if err := a.SaveTurn(ctx, "+1", tool("five")); err != nil {
			t.Fatal(err)
		}
		if err := clear.Clear(ctx, "+1"); err != nil {
			t.Fatal(err)
		}
		if err := a.SaveTurn(ctx, "+1", tool("six")); err != nil {
			t.Fatalf("a tool id of a cleared conversation: %v", err)
		}
		if got, want := texts(), `"six"`; got != want {
			t.Fatalf("after a clear and a tool turn: %s, want %s", got, want)
		}
	}
}

func TestSweepKeepsConversationAtTheTimeout(t *testing.T) {
	now := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	store := memstore.New()
	mem, _ := conversation.New(store, &conversation.Options{Now: func() time.Time { return now }})
	mem.SaveTurn(ctx, "+1", []conversation.Message{conversation.UserText("hi")})
	now = now.Add(conversation.DefaultTimeout)
	if n, err := mem.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("Sweep at exactly the timeout deleted %d (%v), want 0", n, err)
	}
	now = now.Add(time.Nanosecond)
	if n, err := mem.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("Sweep past the timeout deleted %d (%v), want 1", n, err)
	}
}

// TestPeekIsHistoryWithoutDeleting: Peek applies History's expiry and cap
// with the memory's own clock, and never deletes.
func TestPeekIsHistoryWithoutDeleting(t *testing.T) {
	store := memstore.New()
	now := time.Date(2026, 2, 24, 10, 35, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem, _ := conversation.New(store, &conversation.Options{MaxTurns: 3, Now: clock})
	for i := range 4 {
		turn := []conversation.Message{conversation.UserText(fmt.Sprint("q", i)), msg("assistant", `"a"`)}
		if err := mem.SaveTurn(ctx, "+1", turn); err != nil {
			t.Fatal(err)
		}
	}
	// The cap was lowered since: both drop the oldest turn.
	mem, _ = conversation.New(store, &conversation.Options{MaxTurns: 2, Now: clock})
	peek, err := mem.Peek(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := mem.History(ctx, "+1")
	if len(peek) != 4 || peek[0].Text() != "q2" || len(hist) != len(peek) {
		t.Fatalf("Peek = %d messages from %q, History = %d; want 4 from \"q2\" each", len(peek), peek[0].Text(), len(hist))
	}
	for i := range peek {
		if !peek[i].Equal(hist[i]) {
			t.Fatalf("message %d: Peek %s, History %s", i, peek[i].Content, hist[i].Content)
		}
	}

	now = now.Add(conversation.DefaultTimeout + time.Second) // the memory's clock, not time.Now
	if mem.Expired(now.Add(-time.Second)) || !mem.Expired(now.Add(-conversation.DefaultTimeout-time.Second)) {
		t.Fatal("Expired does not follow the memory's clock")
	}
	if peek, err := mem.Peek(ctx, "+1"); err != nil || peek == nil || len(peek) != 0 {
		t.Fatalf("Peek of an expired conversation = %v, %v; want an empty slice", peek, err)
	}
	if _, err := store.Get(ctx, conversation.Conversations, "+1"); err != nil {
		t.Fatalf("Peek deleted the expired conversation: %v", err)
	}
	if _, err := mem.Peek(ctx, " +1"); !errors.Is(err, conversation.ErrInvalidPhone) {
		t.Fatalf("Peek of a bad phone: %v", err)
	}
	if h, _ := mem.History(ctx, "+1"); len(h) != 0 {
		t.Fatal("History of the expired conversation is not empty")
	}
	if _, err := store.Get(ctx, conversation.Conversations, "+1"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("History did not delete the expired conversation: %v", err)
	}
}

// TestKey: a number's conversation is found however the number is written,
// and a key stored as written is found as written.
func TestKey(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	mem, err := conversation.New(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"+14155551234", "4155550000"} {
		if err := mem.SaveTurn(ctx, k, []conversation.Message{conversation.UserText("hi"), {Role: conversation.RoleAssistant, Content: []byte(`"hello"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	for number, want := range map[string]string{
		"14155551234":       "+14155551234",
		"+1 (415) 555-1234": "+14155551234",
		"+14155551234":      "+14155551234",
		"4155550000":        "4155550000", // stored as written by another program
		"+4155550000":       "+4155550000",
		"16505551234":       "+16505551234", // nothing stored: the normalised key
		"system":            "system",
	} {
		if got, err := mem.Key(ctx, number); err != nil || got != want {
			t.Errorf("Key(%q) = %q, %v; want %q", number, got, err, want)
		}
	}
	if _, err := mem.Key(ctx, "+1\x00"); !errors.Is(err, conversation.ErrInvalidPhone) {
		t.Errorf("Key of a NUL = %v, want ErrInvalidPhone", err)
	}
}

// Current is History with the turns and their extra keys: the same turns,
// capped the same way, expired the same way.
func TestCurrentIsHistoryAsTurns(t *testing.T) {
	store := memstore.New()
	now := time.Date(2026, 2, 24, 10, 35, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem, _ := conversation.New(store, &conversation.Options{MaxTurns: 3, Now: clock})
	for i := range 4 {
		turn := conversation.Turn{
			Messages: []conversation.Message{conversation.UserText(fmt.Sprint("q", i)), msg("assistant", `"a"`)},
			Extra:    map[string]json.RawMessage{"window": json.RawMessage(fmt.Sprintf(`{"turns":%d}`, i))},
		}
		if err := mem.Save(ctx, "+1", turn); err != nil {
			t.Fatal(err)
		}
	}
	mem, _ = conversation.New(store, &conversation.Options{MaxTurns: 2, Now: clock})
	c, err := mem.Current(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := mem.History(ctx, "+1")
	if len(c.Turns) != 2 || len(c.Messages()) != len(hist) || !c.LastActive.Equal(now) {
		t.Fatalf("Current = %d turns, last active %v; History %d messages", len(c.Turns), c.LastActive, len(hist))
	}
	if got := string(c.Turns[1].Extra["window"]); got != `{"turns":3}` {
		t.Errorf("the last turn's extra key = %s", got)
	}
	now = now.Add(conversation.DefaultTimeout + time.Second)
	if c, err := mem.Current(ctx, "+1"); err != nil || len(c.Turns) != 0 || !c.LastActive.IsZero() {
		t.Fatalf("Current of an expired conversation = %+v, %v", c, err)
	}
	if _, err := store.Get(ctx, conversation.Conversations, "+1"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("Current did not delete the expired conversation: %v", err)
	}
	if _, err := mem.Current(ctx, " +1"); !errors.Is(err, conversation.ErrInvalidPhone) {
		t.Fatalf("Current of a bad phone: %v", err)
	}
}

// The timeout is read as seconds or as a duration, and must be positive;
// the turns kept are a whole number of at least 1.
func TestParsePolicy(t *testing.T) {
	for v, want := range map[string]time.Duration{"1800": 30 * time.Minute, "30m": 30 * time.Minute, "90s": 90 * time.Second, "1": time.Second} {
		if got, err := conversation.ParseTimeout(v); err != nil || got != want {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for v, want := range map[string]string{"soon": "want seconds (1800) or a duration (30m)", "0": "must be positive", "-5m": "must be positive", "": "want seconds"} {
		if _, err := conversation.ParseTimeout(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTimeout(%q) = %v, want %q", v, err, want)
		}
	}
	if n, err := conversation.ParseMaxTurns("12"); err != nil || n != 12 {
		t.Errorf("ParseMaxTurns(12) = %d, %v", n, err)
	}
	for _, v := range []string{"0", "-1", "ten", "1.5", ""} {
		if _, err := conversation.ParseMaxTurns(v); err == nil || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("ParseMaxTurns(%q) = %v, want an error", v, err)
		}
	}
}

// TestHistoryIsACopy: what History and Current return shares no memory
// with what the memory keeps, so a caller that changes it in place
// changes nothing for the next call.
func TestHistoryIsACopy(t *testing.T) {
	mem, _ := conversation.New(memstore.New(), nil)
	for _, text := range []string{"one", "two"} {
		if err := mem.SaveTurn(ctx, "+1", []conversation.Message{conversation.UserText(text), msg("assistant", `[{"type":"text","text":"ok"}]`)}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := mem.History(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	h, _ := mem.History(ctx, "+1")
	for _, m := range h {
		clear(m.Content)
		m.Role = "x"
	}
	_ = append(h[0].Content[:0], "changed"...)
	c, _ := mem.Current(ctx, "+1")
	for _, turn := range c.Turns {
		for i := range turn.Messages {
			clear(turn.Messages[i].Content)
			turn.Messages[i] = conversation.UserText("changed")
		}
	}
	got, err := mem.History(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	if gotJSON, _ := json.Marshal(got); string(gotJSON) != string(wantJSON) {
		t.Fatalf("after changing what History and Current returned: %s\nwant %s", gotJSON, wantJSON)
	}
}

// TestSaveCopiesTheTurn: Save keeps no memory of the turn it is given, so
// a caller that reuses its buffers changes nothing that is remembered.
func TestSaveCopiesTheTurn(t *testing.T) {
	mem, _ := conversation.New(memstore.New(), nil)
	turn := conversation.Turn{
		Messages: []conversation.Message{conversation.UserText("hi"), {Role: "assistant", Content: json.RawMessage(`[{"type":"text","text":"hello"}]`), Extra: map[string]json.RawMessage{"k": json.RawMessage(`"v"`)}}},
		Extra:    map[string]json.RawMessage{"usage": json.RawMessage(`{"in":1}`)},
	}
	if err := mem.Save(ctx, "+1", turn); err != nil {
		t.Fatal(err)
	}
	before, _ := mem.Current(ctx, "+1")
	want, _ := before.Turns[0].MarshalJSON()
	for _, m := range turn.Messages {
		for i := range m.Content {
			m.Content[i] = ' '
		}
		for _, v := range m.Extra {
			clear(v)
		}
	}
	for _, v := range turn.Extra {
		clear(v)
	}
	after, _ := mem.Current(ctx, "+1")
	if got, _ := after.Turns[0].MarshalJSON(); string(got) != string(want) {
		t.Fatalf("after the caller changed its turn: %s\nwant %s", got, want)
	}
}
