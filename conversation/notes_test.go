package conversation_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mombot/mombot/conversation"
)

// TestForgetTurn: a forgotten turn keeps no text, stays a turn the API
// accepts, and keeps its tool calls' ids and names.
func TestForgetTurn(t *testing.T) {
	msg := func(role, content string) conversation.Message {
		return conversation.Message{Role: role, Content: json.RawMessage(content)}
	}
	turn := conversation.Turn{
		Messages: []conversation.Message{
			conversation.UserText("remember: Emma is allergic to peanuts"),
			msg("assistant", `[{"type":"text","text":"Noting it."},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"peanuts"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"tool_use","id":"toolu_1","name":"remember","input":{"text":"Emma is allergic to peanuts","scope":"family"}}]`),
			msg("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"Noted as #1 (peanuts)"}],"is_error":true}]`),
			msg("assistant", `[{"type":"text","text":"Noted: Emma is allergic to peanuts."}]`),
		},
		Extra: map[string]json.RawMessage{"usage": json.RawMessage(`{"input_tokens":5}`)},
	}
	if err := conversation.ValidateTurn(turn.Messages); err != nil {
		t.Fatalf("the test's turn is invalid: %v", err)
	}
	got := conversation.ForgetTurn(turn)
	data, err := got.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(string(data)), "peanut") {
		t.Errorf("the forgotten turn still holds the text: %s", data)
	}
	if err := conversation.ValidateTurn(got.Messages); err != nil {
		t.Errorf("the forgotten turn is invalid: %v\n%s", err, data)
	}
	want := `{"messages":[{"role":"user","content":"[forgotten]"},{"role":"assistant","content":[{"type":"text","text":"[forgotten]"},{"type":"tool_use","id":"toolu_1","name":"remember","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"[forgotten]","is_error":true}]},{"role":"assistant","content":[{"type":"text","text":"[forgotten]"}]}],"usage":{"input_tokens":5}}`
	if string(data) != want {
		t.Errorf("ForgetTurn =\n%s\nwant\n%s", data, want)
	}
}

// TestRenderMemory: the memory is rendered as "#N (scope) text" lines in
// the order given, the summary after, the same bytes every time, and
// nothing at all when there is nothing to show.
func TestRenderMemory(t *testing.T) {
	notes := []conversation.ShownNote{{ID: 3, Scope: "family", Text: "Emma is allergic to peanuts"}, {ID: 7, Scope: "private", Text: "gift\nin the garage"}}
	got := conversation.RenderMemory(notes, "")
	want := conversation.MemoryHeader + "\n#3 (family) Emma is allergic to peanuts\n#7 (private) gift in the garage"
	if got != want {
		t.Errorf("RenderMemory =\n%s\nwant\n%s", got, want)
	}
	if again := conversation.RenderMemory(notes, ""); again != got {
		t.Error("RenderMemory is not byte-stable")
	}
	withSummary := conversation.RenderMemory(notes, " Talked about soccer. ")
	if withSummary != want+"\n\n"+conversation.SummaryHeader+"\nTalked about soccer." {
		t.Errorf("RenderMemory with a summary =\n%s", withSummary)
	}
	if s := conversation.RenderMemory(nil, "  "); s != "" {
		t.Errorf("RenderMemory of nothing = %q, want \"\"", s)
	}
	if s := conversation.RenderMemory(nil, "only a summary"); s != conversation.SummaryHeader+"\nonly a summary" {
		t.Errorf("RenderMemory of a summary alone = %q", s)
	}
}
