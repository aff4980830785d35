package lists_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/assistant/lists"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
)

// The multi-step follow-ups of the original design: "add those to the
// grocery list", then "remove the second one", across messages.
func TestFollowUps(t *testing.T) {
	s, _ := open(t)
	reg, err := assistant.NewRegistry(lists.Tools(s)...)
	if err != nil {
		t.Fatal(err)
	}
	srv := anthropictest.NewServer(t)
	mem, _ := conversation.New(memstore.New(), nil)
	a, err := assistant.New(srv.Client(), mem, &assistant.Options{
		Tools:  reg,
		Family: map[string]assistant.Person{"+14155551234": {Name: "Erin"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(
		anthropictest.Text("For tacos you need tortillas, chicken and limes."),
		anthropictest.ToolUse("", anthropictest.Call{Name: "list_add", Input: map[string]any{"list": "grocery", "items": []string{"tortillas", "chicken", "limes"}}}),
		anthropictest.Text("Added all three."),
		anthropictest.ToolUse("", anthropictest.Call{Name: "list_remove", Input: map[string]any{"list": "grocery", "positions": []int{2}}}),
		anthropictest.Text("Removed chicken."),
		anthropictest.ToolUse("", anthropictest.Call{Name: "list_show", Input: map[string]any{}}),
		anthropictest.Text("You have a grocery list."),
	)
	for _, text := range []string{"what do I need for tacos?", "add those to the grocery list", "remove the second one", "what lists do we have?"} {
		if _, err := a.Handle(context.Background(), assistant.Inbound{From: "+14155551234", Text: text}); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}
	items, err := s.Items("grocery")
	if err != nil || texts(items) != "[tortillas limes]" || items[0].AddedBy != "Erin" {
		t.Errorf("grocery = %v, %v", texts(items), err)
	}
	reqs := srv.Requests()
	var results []string
	for _, i := range []int{2, 4, 6} {
		msgs := reqs[i].Params.Messages
		var m struct {
			Content []struct {
				Content string `json:"content"`
				IsError bool   `json:"is_error"`
			} `json:"content"`
		}
		_ = json.Unmarshal(msgs[len(msgs)-1], &m)
		if m.Content[0].IsError {
			t.Errorf("tool error: %s", m.Content[0].Content)
		}
		results = append(results, m.Content[0].Content)
	}
	want := []string{
		"Added. The grocery list (3):\n1. tortillas\n2. chicken\n3. limes",
		"Removed chicken. The grocery list (2):\n1. tortillas\n2. limes",
		"Lists:\n- grocery (2)",
	}
	for i := range want {
		if results[i] != want[i] {
			t.Errorf("result %d = %q, want %q", i, results[i], want[i])
		}
	}
	if len(srv.Rejected()) != 0 {
		t.Errorf("rejected: %q", srv.Rejected())
	}
}

func TestToolErrors(t *testing.T) {
	s, _ := open(t)
	tools := lists.Tools(s)
	run := func(name, input string) (string, error) {
		for _, tool := range tools {
			if tool.Name() == name {
				return tool.Run(context.Background(), assistant.Call{Input: json.RawMessage(input)})
			}
		}
		t.Fatalf("no tool %s", name)
		return "", nil
	}
	for _, tc := range []struct{ tool, input, want string }{
		{"list_add", `{"list":"grocery","items":[]}`, "at least one item"},
		{"list_add", `{"list":"grocery","items":["  "]}`, "some text"},
		{"list_add", `{"list":"grocery","item":"milk"}`, "invalid input"},
		{"list_remove", `{"list":"grocery"}`, "give the numbers"},
		{"list_remove", `{"list":"grocery","positions":[1]}`, "no such list"},
	} {
		if _, err := run(tc.tool, tc.input); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: err = %v, want %q", tc.tool, tc.input, err, tc.want)
		}
	}
	if out, err := run("list_show", `{"list":"to-do"}`); err != nil || out != "The to-do list is empty." {
		t.Errorf("show missing list = %q, %v", out, err)
	}
}
