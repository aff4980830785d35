package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ListsKey is the key of the one [Lists] record a store keeps: the
// family's, as its notes are kept under [DefaultFamilyID].
const ListsKey = DefaultFamilyID

// ListItem is one entry of a family list.
type ListItem struct {
	Text    string    `json:"text"`
	AddedBy string    `json:"added_by,omitempty"` // the family member's name; empty for others
	AddedAt time.Time `json:"added_at"`
}

// RemovedItem is an item removed from a list, as it was, with who removed
// it and when, kept for a while so that the removal can be undone.
type RemovedItem struct {
	List string `json:"list"`
	ListItem
	// RemovedBy is the family member's name; empty for others and for the
	// lists page.
	RemovedBy string    `json:"removed_by,omitempty"`
	RemovedAt time.Time `json:"removed_at"`
	// Removal numbers the removal that took the item: the items one call
	// removed share it, and a later removal has a larger one.
	Removal int64 `json:"removal"`
}

// FamilyLists is the family's shared lists (grocery, to-do, ...) as a store
// keeps them, under [ListsKey] of kind [Lists]:
//
//	{"lists":{"grocery":[{"text":"milk","added_by":"Erin","added_at":"..."}]},
//	 "removed":[{"list":"grocery","text":"eggs",...,"removed_by":"Erin","removed_at":"...","removal":3}]}
//
// which is also the layout of the lists.json file of earlier releases.
// Lists are keyed by their normalised name ([ListName]); a list holds no
// two items whose texts are equal ignoring case ([FamilyLists.Add]), and no
// list is empty. What the lists may hold (their limits, how long removed
// items stay) and what the changes mean is package assistant/lists';
// [Memory.UpdateFamilyLists] writes a change whole or not at all.
type FamilyLists struct {
	Lists   map[string][]ListItem `json:"lists"`
	Removed []RemovedItem         `json:"removed,omitempty"` // oldest first
}

// ListName returns the key a list is kept under: lower case, control
// characters as spaces, white space trimmed and collapsed ("Grocery " and
// "grocery" are one list).
func ListName(list string) string {
	return strings.ToLower(OneLine(list))
}

// Add appends to the list name, creating it, the items that are not on it
// already, ignoring case (nor twice among items), and returns those it
// added. It checks no limit.
func (l *FamilyLists) Add(name string, items []ListItem) []ListItem {
	if l.Lists == nil {
		l.Lists = map[string][]ListItem{}
	}
	cur := l.Lists[name]
	var added []ListItem
	for _, it := range items {
		if indexItem(cur, it.Text) >= 0 {
			continue
		}
		cur = append(cur, it)
		added = append(added, it)
	}
	if len(cur) > 0 {
		l.Lists[name] = cur
	}
	return added
}

// Merge adds in's items and removed items to l, each once, and returns
// how many items it added to the lists: several copies of the lists (each
// replica's lists.json, or two stores') become one. An item already on its
// list, ignoring case, is kept as it was; the others are added at the end
// of their list, in in's order, lists taken by name. A removed item is
// added unless l has it (same list, text ignoring case, and time), its
// removals numbered after l's so that "put back the last removal" never
// mixes removals of the two. No limit is checked.
func (l *FamilyLists) Merge(in FamilyLists) (added int) {
	for _, k := range slices.Sorted(maps.Keys(in.Lists)) {
		items := make([]ListItem, 0, len(in.Lists[k]))
		for _, it := range in.Lists[k] {
			if it.Text = OneLine(it.Text); it.Text != "" {
				items = append(items, it)
			}
		}
		added += len(l.Add(ListName(k), items))
	}
	next := int64(1)
	for _, r := range l.Removed {
		next = max(next, r.Removal+1)
	}
	renumber := map[int64]int64{}
	for _, r := range in.Removed {
		r.List = ListName(r.List)
		if r.List == "" || r.Text == "" || slices.ContainsFunc(l.Removed, func(o RemovedItem) bool {
			return o.List == r.List && strings.EqualFold(o.Text, r.Text) && o.RemovedAt.Equal(r.RemovedAt)
		}) {
			continue
		}
		n, ok := renumber[r.Removal]
		if !ok {
			n = next
			next++
			renumber[r.Removal] = n
		}
		r.Removal = n
		l.Removed = append(l.Removed, r)
	}
	slices.SortStableFunc(l.Removed, func(a, b RemovedItem) int { return a.RemovedAt.Compare(b.RemovedAt) })
	return added
}

// indexItem returns the index of the item whose text is text ignoring
// case, or -1.
func indexItem(items []ListItem, text string) int {
	for i, it := range items {
		if strings.EqualFold(it.Text, text) {
			return i
		}
	}
	return -1
}

// ItemCount returns how many items the lists hold.
func (l *FamilyLists) ItemCount() int {
	n := 0
	for _, v := range l.Lists {
		n += len(v)
	}
	return n
}

// Encode returns the lists' stored form (compact JSON), empty lists left
// out.
func (l *FamilyLists) Encode() ([]byte, error) {
	for k, v := range l.Lists {
		if len(v) == 0 {
			delete(l.Lists, k)
		}
	}
	if l.Lists == nil {
		l.Lists = map[string][]ListItem{}
	}
	return json.Marshal(l)
}

// DecodeFamilyLists reads the lists' stored form, or a lists.json file.
func DecodeFamilyLists(data []byte) (FamilyLists, error) {
	var l FamilyLists
	if err := json.Unmarshal(data, &l); err != nil {
		return FamilyLists{}, fmt.Errorf("the family's lists are not a lists object: %w", err)
	}
	if l.Lists == nil {
		l.Lists = map[string][]ListItem{}
	}
	return l, nil
}

// FamilyLists returns the family's lists; none are stored is no lists,
// not an error.
func (m *Memory) FamilyLists(ctx context.Context) (FamilyLists, error) {
	rec, err := m.store.Get(ctx, Lists, ListsKey)
	if errors.Is(err, ErrNotFound) {
		return FamilyLists{Lists: map[string][]ListItem{}}, nil
	}
	if err == nil {
		var l FamilyLists
		if l, err = DecodeFamilyLists(rec.Data); err == nil {
			return l, nil
		}
	}
	return FamilyLists{}, fmt.Errorf("conversation: lists: %w", err)
}

// UpdateFamilyLists reads the family's lists, lets change edit them and
// writes them back on the condition that nobody wrote them meanwhile,
// reading again and calling change again when somebody did, so that two
// changes, from any process or replica sharing the store, never lose each
// other. An error of change is returned as it is, and nothing is written.
func (m *Memory) UpdateFamilyLists(ctx context.Context, change func(l *FamilyLists) error) error {
	var changeErr error
	err := m.updateRecord(ctx, Lists, ListsKey, 0, func(data []byte) ([]byte, error) {
		l := FamilyLists{Lists: map[string][]ListItem{}}
		if data != nil {
			var err error
			if l, err = DecodeFamilyLists(data); err != nil {
				return nil, err
			}
		}
		if changeErr = change(&l); changeErr != nil {
			return nil, changeErr
		}
		return l.Encode()
	})
	if err != nil && changeErr == nil {
		return fmt.Errorf("conversation: update lists: %w", err)
	}
	return err
}

// checkLists returns an error unless rec holds the family's lists as
// [Memory.UpdateFamilyLists] writes them: under ListsKey, no empty list,
// names as [ListName] keeps them, no item twice in a list (ignoring case)
// and no item without text. Limits are not checked: lists from before them
// may exceed them.
func checkLists(rec Record) error {
	if rec.Key != ListsKey {
		return fmt.Errorf("lists record under %q, want %q", rec.Key, ListsKey)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(rec.Data, &obj); err != nil || obj == nil {
		return errors.New("lists record is not a JSON object")
	}
	l, err := DecodeFamilyLists(rec.Data)
	if err != nil {
		return err
	}
	for name, items := range l.Lists {
		switch {
		case name == "" || ListName(name) != name:
			return fmt.Errorf("list %q: not a normalised name", name)
		case len(items) == 0:
			return fmt.Errorf("list %q is empty", name)
		}
		for i, it := range items {
			if it.Text == "" {
				return fmt.Errorf("list %q: item %d has no text", name, i+1)
			}
			if j := indexItem(items[:i], it.Text); j >= 0 {
				return fmt.Errorf("list %q: %q twice", name, it.Text)
			}
		}
	}
	for _, r := range l.Removed {
		if r.List == "" || r.Text == "" {
			return fmt.Errorf("removed item %+v without its list or text", r)
		}
	}
	return nil
}
