package assistant

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mombot/mombot/conversation"
)

// toolTurn returns a turn of the person's text, rounds tool calls with
// input and result, and an answer.
func toolTurn(text string, rounds int, input, result string) conversation.Turn {
	msgs := []conversation.Message{conversation.UserText(text)}
	for i := range rounds {
		id := fmt.Sprintf("toolu_%03d", i)
		in, _ := json.Marshal(map[string]string{"query": input})
		msgs = append(msgs,
			conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Looking."),
				json.RawMessage(`{"type":"tool_use","id":"`+id+`","name":"lookup","input":`+string(in)+`}`)),
			conversation.NewMessage(conversation.RoleUser,
				json.RawMessage(`{"type":"tool_result","tool_use_id":"`+id+`","content":`+string(quote(result))+`}`)))
	}
	msgs = append(msgs, conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Done.")))
	return conversation.Turn{Messages: msgs, Extra: usageKey}
}

// usageKey is a turn's keys besides its messages, which a shortened turn
// keeps.
var usageKey = map[string]json.RawMessage{"usage": json.RawMessage(`{}`)}

// checkShape fails t unless got is a valid turn: a user message first,
// roles alternating, every tool_use answered in the next message, every
// text valid UTF-8 and not blank.
func checkShape(t *testing.T, got conversation.Turn) {
	t.Helper()
	var pending []string
	for i, m := range got.Messages {
		if want := []string{conversation.RoleUser, conversation.RoleAssistant}[i%2]; m.Role != want {
			t.Fatalf("message %d is the %s's, want the %s's", i, m.Role, want)
		}
		blocks, err := m.Blocks()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		var answered []string
		var uses []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) == "" || !utf8.ValidString(b.Text) {
					t.Errorf("message %d: text %q", i, b.Text)
				}
			case "tool_use":
				var obj map[string]any
				if json.Unmarshal(b.Input, &obj) != nil || obj == nil {
					t.Errorf("message %d: input %s is not an object", i, b.Input)
				}
				uses = append(uses, b.ID)
			case "tool_result":
				answered = append(answered, b.ToolUseID)
			}
		}
		if !slices.Equal(answered, pending) {
			t.Errorf("message %d answers %q, want %q", i, answered, pending)
		}
		pending = uses
	}
	if len(pending) > 0 {
		t.Errorf("calls %q are not answered", pending)
	}
}

func TestShorten(t *testing.T) {
	const limit = 48_000
	tests := []struct {
		name string
		turn conversation.Turn
		// summary is set when only the two-message form fits.
		summary bool
	}{
		{"long tool results", toolTurn("find recipes", 25, "chicken", strings.Repeat("traybake ", 2500)), false},
		{"long tool inputs", toolTurn("add these", 10, strings.Repeat("milk, ", 2000), "Added."), false},
		{"a long pasted message", conversation.Turn{Messages: []conversation.Message{
			conversation.UserText(strings.Repeat("é long letter ", 20_000)),
			conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("A long letter.")),
		}, Extra: usageKey}, false},
		{"too many rounds to cut", toolTurn("look it all up", 300, "q", "r"), true},
		{"a block that cannot be cut", conversation.Turn{Messages: []conversation.Message{
			conversation.UserText("think hard"),
			conversation.NewMessage(conversation.RoleAssistant,
				json.RawMessage(`{"type":"thinking","thinking":"`+strings.Repeat("hmm ", 20_000)+`","signature":"sig"}`),
				conversation.TextBlock("Thought it through.")),
		}, Extra: usageKey}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if turnBytes(tt.turn) <= limit {
				t.Fatalf("the turn is %d bytes, not over the limit", turnBytes(tt.turn))
			}
			got := shorten(tt.turn, limit)
			if n := turnBytes(got); n > limit {
				t.Errorf("the shortened turn is %d bytes, over the limit of %d", n, limit)
			}
			checkShape(t, got)
			if summary := len(got.Messages) == 2 && strings.HasPrefix(got.Messages[1].Text(), "[Shortened: "); summary != tt.summary {
				t.Errorf("summarized %v, want %v: %d messages", summary, tt.summary, len(got.Messages))
			}
			if !tt.summary && len(got.Messages) != len(tt.turn.Messages) {
				t.Errorf("%d messages, want the turn's %d", len(got.Messages), len(tt.turn.Messages))
			}
			if string(got.Extra["usage"]) != "{}" {
				t.Errorf("the turn's keys were lost: %v", got.Extra)
			}
			// The same turn gives the same bytes, every time.
			again := shorten(tt.turn, limit)
			for i := range got.Messages {
				if !got.Messages[i].Equal(again.Messages[i]) {
					t.Fatalf("message %d differs from one shortening to the next", i)
				}
			}
		})
	}
}

// A turn within its share of the window, and a conversation with none
// over it, are sent as stored.
func TestShortTurnsLeavesSmallTurns(t *testing.T) {
	turns := []conversation.Turn{toolTurn("a", 2, "q", "r"), toolTurn("b", 3, "q", "r")}
	if got := shortTurns(turns, 48_000); &got[0] != &turns[0] {
		t.Errorf("a conversation of small turns was copied")
	}
	big := toolTurn("c", 25, "q", strings.Repeat("r", 5000))
	got := shortTurns(append(turns, big), 48_000)
	for i := range turns {
		for j := range turns[i].Messages {
			if !got[i].Messages[j].Equal(turns[i].Messages[j]) {
				t.Errorf("turn %d message %d was changed", i, j)
			}
		}
	}
	if turnBytes(got[2]) > 48_000 {
		t.Errorf("the large turn was not shortened")
	}
}

// The bound follows the window's options: max_tokens over min_turns, at 4
// bytes a token.
func TestTurnLimit(t *testing.T) {
	o, err := WindowOptions{}.resolve(10)
	if err != nil {
		t.Fatal(err)
	}
	if got := turnLimit(o); got != 48_000 {
		t.Errorf("the default limit is %d bytes, want 48,000", got)
	}
	o, _ = WindowOptions{MaxTokens: 10_000, LowTokens: 5_000, MinTurns: 1}.resolve(10)
	if got := turnLimit(o); got != 40_000 {
		t.Errorf("the limit is %d bytes, want 40,000", got)
	}
}
