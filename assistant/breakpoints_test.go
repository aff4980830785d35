package assistant

import (
	"encoding/json"
	"testing"

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
