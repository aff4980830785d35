package main

import (
	"encoding/json"
	"testing"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
)

// TestUsageAfterAsk: what mombot ask processes were billed, tool rounds
// included, is what mombot usage reports, and it stays after the
// conversation is cleared.
func TestUsageAfterAsk(t *testing.T) {
	f := newAskFixture(t, buildMombot(t))
	f.claude.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{ID: "toolu_usage_add", Name: "list_add", Input: map[string]any{"list": "grocery", "items": []string{"milk"}}}),
		anthropictest.Text("Added milk."),
		anthropictest.Text("Hi Jason."),
	)
	f.ask(askErin, "add milk to the grocery list")
	f.ask(askJason, "hello")

	// The usage stored on each turn, before the turns go.
	turnUsage := map[string]assistant.Usage{}
	for phone, raw := range f.conversations() {
		var c struct {
			Turns []struct {
				Usage assistant.Usage `json:"usage"`
			} `json:"turns"`
		}
		if err := json.Unmarshal(raw, &c); err != nil || len(c.Turns) != 1 {
			t.Fatalf("%s's conversation %s: %v", phone, raw, err)
		}
		turnUsage[phone] = c.Turns[0].Usage
	}
	if _, stderr, err := f.mombot("history", "clear", askErin); err != nil {
		t.Fatalf("history clear: %v\n%s", err, stderr)
	}

	out, stderr, err := f.mombot("usage", "--json", "--full")
	if err != nil {
		t.Fatalf("usage: %v\n%s", err, stderr)
	}
	var r struct {
		People []struct {
			Phone    string `json:"phone"`
			Name     string `json:"name"`
			Messages int64  `json:"messages"`
			Calls    int64  `json:"api_calls"`
			Input    int64  `json:"input_tokens"`
			Write5m  int64  `json:"cache_write_5m_tokens"`
			Write1h  int64  `json:"cache_write_1h_tokens"`
			Read     int64  `json:"cache_read_tokens"`
			Output   int64  `json:"output_tokens"`
		} `json:"people"`
		Total struct {
			Messages int64 `json:"messages"`
			Calls    int64 `json:"api_calls"`
		} `json:"total"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("usage --json: %v\n%s", err, out)
	}
	if len(r.People) != 2 || r.Total.Messages != 2 || r.Total.Calls != 3 {
		t.Fatalf("usage after two messages, one with a tool round: %s", out)
	}
	wantNames := map[string]string{askErin: "Erin", askJason: "Jason"}
	for _, p := range r.People {
		u, ok := turnUsage[p.Phone]
		if !ok || p.Name != wantNames[p.Phone] {
			t.Fatalf("unexpected person %+v", p)
		}
		if p.Messages != 1 || p.Calls != int64(u.Calls) || p.Input != u.InputTokens || p.Write5m != u.CacheCreation.Ephemeral5mInputTokens ||
			p.Write1h != u.CacheCreation.Ephemeral1hInputTokens || p.Read != u.CacheReadInputTokens || p.Output != u.OutputTokens {
			t.Errorf("%s: usage reports %+v, the turn stored %+v", p.Name, p, u)
		}
	}
}
