package lists

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mombot/mombot/assistant"
)

// Tools returns the list tools over s: list_add, list_remove, list_show
// and list_restore.
func Tools(s *Store) []assistant.Tool {
	return []assistant.Tool{addTool{s}, removeTool{s}, showTool{s}, restoreTool{s}}
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
	return "Remove items from one of the family's shared lists, by their number as last shown (1 is the first) or by their text. Numbers refer to the list before this removal. Returns what was removed (naming who added another member's items) and the list after, renumbered; list_restore undoes a removal for 7 days."
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
	removed, left, err := t.s.Remove(ctx, in.List, in.Items, in.Positions, c.Person.Name)
	if err != nil {
		return "", err
	}
	// Whose items went is said, so that the model can tell the person,
	// and how to undo it.
	names := make([]string, len(removed))
	others := false
	for i, it := range removed {
		names[i] = it.Text
		if it.AddedBy != "" && !sameName(it.AddedBy, c.Person.Name) {
			names[i] += " (added by " + it.AddedBy + ")"
			others = true
		}
	}
	out := "Removed " + strings.Join(names, ", ") + ". "
	if others {
		out += "Another family member added some of them; list_restore puts them back if that was a mistake. "
	}
	return out + render(Name(in.List), left), nil
}

type showTool struct{ s *Store }

func (showTool) Name() string { return "list_show" }
func (showTool) Description() string {
	return "Show one of the family's shared lists, numbered, with what someone else removed from it lately, or, without a list name, the names of all lists and how many items each has."
}
func (showTool) InputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + listProp + `}}`)
}

func (t showTool) Run(ctx context.Context, c assistant.Call) (string, error) {
	var in struct {
		List string `json:"list"`
	}
	if err := c.DecodeInput(&in); err != nil {
		return "", err
	}
	if Name(in.List) == "" {
		sums, err := t.s.Lists(ctx)
		if err != nil {
			return "", err
		}
		if len(sums) == 0 {
			return "There are no lists yet.", nil
		}
		var b strings.Builder
		b.WriteString("Lists:")
		for _, s := range sums {
			fmt.Fprintf(&b, "\n- %s (%d)", shown(s.Name), s.Items)
		}
		return b.String(), nil
	}
	items, err := t.s.Items(ctx, in.List)
	out := ""
	switch {
	case errors.Is(err, ErrNoList):
		out = fmt.Sprintf("The %s list is empty.", shown(Name(in.List)))
	case err != nil:
		return "", err
	default:
		out = render(Name(in.List), items)
	}
	removed, err := t.s.RemovedFrom(ctx, in.List)
	if err != nil {
		return "", err
	}
	return out + removedNote(removed, c.Person), nil
}

// sameName reports whether two family members' names are the same
// person's.
func sameName(a, b string) bool { return strings.EqualFold(a, b) }

// maxRemovedShown bounds the removals list_show tells of.
const maxRemovedShown = 10

// removedNote tells of the items someone other than p removed lately,
// newest first, so that a family member sees who emptied their list and
// can have it put back.
func removedNote(removed []Removed, p assistant.Person) string {
	var lines []string
	n := 0
	for _, r := range removed {
		if sameName(r.RemovedBy, p.Name) {
			continue
		}
		n++
		if len(lines) == maxRemovedShown {
			continue
		}
		line := "- " + r.Text
		if r.AddedBy != "" {
			line += " (added by " + r.AddedBy + ")"
		}
		who := r.RemovedBy
		if who == "" {
			who = "someone outside this chat"
		}
		at := r.RemovedAt
		if p.Location != nil {
			at = at.In(p.Location)
		}
		lines = append(lines, line+", removed by "+who+" on "+at.Format("Mon 2 Jan 15:04"))
	}
	if n == 0 {
		return ""
	}
	if n > len(lines) {
		lines = append(lines, fmt.Sprintf("- and %d more", n-len(lines)))
	}
	return "\nRemoved lately by someone else (list_restore puts them back):\n" + strings.Join(lines, "\n")
}

type restoreTool struct{ s *Store }

func (restoreTool) Name() string { return "list_restore" }
func (restoreTool) Description() string {
	return "Undo a removal from one of the family's shared lists, up to 7 days back: put back the items named or, without items, all that the last removal took. Returns what was put back and the list, numbered."
}
func (restoreTool) InputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + listProp + `,"items":{"type":"array","items":{"type":"string"},"description":"Removed items to put back; leave out to undo the last removal."}},"required":["list"]}`)
}

func (t restoreTool) Run(ctx context.Context, c assistant.Call) (string, error) {
	var in struct {
		List  string   `json:"list"`
		Items []string `json:"items"`
	}
	if err := c.DecodeInput(&in); err != nil {
		return "", err
	}
	restored, items, err := t.s.Restore(ctx, in.List, in.Items)
	if err != nil {
		return "", err
	}
	if len(restored) == 0 {
		return "They are on the list already. " + render(Name(in.List), items), nil
	}
	names := make([]string, len(restored))
	for i, it := range restored {
		names[i] = it.Text
	}
	return "Put back " + strings.Join(names, ", ") + ". " + render(Name(in.List), items), nil
}

// render writes a list numbered from 1.
func render(name string, items []Item) string {
	if len(items) == 0 {
		return fmt.Sprintf("The %s list is now empty.", shown(name))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The %s list (%d):", shown(name), len(items))
	for i, it := range items {
		fmt.Fprintf(&b, "\n%d. %s", i+1, it.Text)
	}
	return b.String()
}
