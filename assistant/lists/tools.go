package lists

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mombot/mombot/assistant"
)

// Tools returns the list tools over s: list_add, list_remove and list_show.
func Tools(s *Store) []assistant.Tool {
	return []assistant.Tool{addTool{s}, removeTool{s}, showTool{s}}
}

const listProp = `"list":{"type":"string","description":"The list's name, short and lower case: \"grocery\", \"to-do\", \"packing\"."}`

type addTool struct{ s *Store }

func (addTool) Name() string { return "list_add" }
func (addTool) Description() string {
	return "Add items to one of the family's shared lists, creating the list if needed. Every family member sees the same lists. Each item is one short entry (\"2 lb chicken thighs\"). Items already on the list are not added twice. Returns the whole list, numbered."
}
func (addTool) InputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + listProp + `,"items":{"type":"array","items":{"type":"string"},"minItems":1,"description":"The items to add."}},"required":["list","items"]}`)
}

func (t addTool) Run(ctx context.Context, c assistant.Call) (string, error) {
	var in struct {
		List  string   `json:"list"`
		Items []string `json:"items"`
	}
	if err := c.DecodeInput(&in); err != nil {
		return "", err
	}
	if len(in.Items) == 0 {
		return "", fmt.Errorf("give at least one item")
	}
	items, err := t.s.Add(ctx, in.List, in.Items, c.Person.Name)
	if err != nil {
		return "", err
	}
	return "Added. " + render(Name(in.List), items), nil
}

type removeTool struct{ s *Store }

func (removeTool) Name() string { return "list_remove" }
func (removeTool) Description() string {
	return "Remove items from one of the family's shared lists, by their number as last shown (1 is the first) or by their text. Numbers refer to the list before this removal. Returns what was removed and the list after, renumbered."
}
func (removeTool) InputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + listProp + `,"positions":{"type":"array","items":{"type":"integer","minimum":1},"description":"Numbers of the items to remove, as shown."},"items":{"type":"array","items":{"type":"string"},"description":"Texts of the items to remove."}},"required":["list"]}`)
}

func (t removeTool) Run(ctx context.Context, c assistant.Call) (string, error) {
	var in struct {
		List      string   `json:"list"`
		Positions []int    `json:"positions"`
		Items     []string `json:"items"`
	}
	if err := c.DecodeInput(&in); err != nil {
		return "", err
	}
	if len(in.Positions) == 0 && len(in.Items) == 0 {
		return "", fmt.Errorf("give the numbers or the texts of the items to remove")
	}
	removed, left, err := t.s.Remove(ctx, in.List, in.Items, in.Positions)
	if err != nil {
		return "", err
	}
	names := make([]string, len(removed))
	for i, it := range removed {
		names[i] = it.Text
	}
	return "Removed " + strings.Join(names, ", ") + ". " + render(Name(in.List), left), nil
}

type showTool struct{ s *Store }

func (showTool) Name() string { return "list_show" }
func (showTool) Description() string {
	return "Show one of the family's shared lists, numbered, or, without a list name, the names of all lists and how many items each has."
}
func (showTool) InputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + listProp + `}}`)
}

func (t showTool) Run(_ context.Context, c assistant.Call) (string, error) {
	var in struct {
		List string `json:"list"`
	}
	if err := c.DecodeInput(&in); err != nil {
		return "", err
	}
	if Name(in.List) == "" {
		sums, err := t.s.Lists()
		if err != nil {
			return "", err
		}
		if len(sums) == 0 {
			return "There are no lists yet.", nil
		}
		var b strings.Builder
		b.WriteString("Lists:")
		for _, s := range sums {
			fmt.Fprintf(&b, "\n- %s (%d)", s.Name, s.Items)
		}
		return b.String(), nil
	}
	items, err := t.s.Items(in.List)
	if errors.Is(err, ErrNoList) {
		return fmt.Sprintf("The %s list is empty.", Name(in.List)), nil
	}
	if err != nil {
		return "", err
	}
	return render(Name(in.List), items), nil
}

// render writes a list numbered from 1.
func render(name string, items []Item) string {
	if len(items) == 0 {
		return fmt.Sprintf("The %s list is now empty.", name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The %s list (%d):", name, len(items))
	for i, it := range items {
		fmt.Fprintf(&b, "\n%d. %s", i+1, it.Text)
	}
	return b.String()
}
