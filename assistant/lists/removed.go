package lists

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mombot/mombot/conversation"
)

// Removed items are kept for a while so that a removal can be undone:
// ticking items off a shared list is what a family does most, so removing
// is never refused, but a removal by mistake, or by a model misled by a
// document that says "clear the grocery list", can be put back, and the
// person whose items went can see who removed them.

// KeepRemoved is how long a removed item can be put back, and MaxRemoved
// how many removed items are kept at most (the newest; a whole list's
// worth). The oldest go first when the lists reach MaxBytes.
const (
	KeepRemoved = 7 * 24 * time.Hour
	MaxRemoved  = MaxItems
)

// Removed is an item removed from a list, as it was, with who removed it
// and when.
type Removed = conversation.RemovedItem

// discard keeps items, removed from the list name by by, among f's
// removed items, as one removal.
func (s *Store) discard(f *file, name string, items []Item, by string) {
	now := s.now().UTC()
	n := int64(1)
	if len(f.Removed) > 0 {
		n = f.Removed[len(f.Removed)-1].Removal + 1
	}
	for _, it := range items {
		f.Removed = append(f.Removed, Removed{List: name, ListItem: it, RemovedBy: by, RemovedAt: now, Removal: n})
	}
}

// recent returns the removed items that may still be put back at now: at
// most MaxRemoved, none older than KeepRemoved.
func recent(removed []Removed, now time.Time) []Removed {
	removed = removed[max(0, len(removed)-MaxRemoved):]
	i := 0
	for i < len(removed) && now.Sub(removed[i].RemovedAt) > KeepRemoved {
		i++
	}
	return removed[i:]
}

// forget returns removed without its oldest entries, at least excess
// bytes of them as encoded.
func forget(removed []Removed, excess int) []Removed {
	dropped, i := 0, 0
	for i < len(removed) && dropped < excess {
		b, _ := json.Marshal(removed[i]) // a Removed always encodes
		dropped += len(b)
		i++
	}
	return removed[i:]
}

// Restore puts back on list the items removed from it in the last
// KeepRemoved: those whose text matches one of texts (equal ignoring case,
// or else the only one containing it; the latest removal of it), or, with
// no texts, all that the latest removal from the list took. Items on the
// list again meanwhile are not added twice. It returns the items put back
// and the list after; it fails, changing nothing, when an item is not
// among the removed (ErrNoItem) or the list's or the file's limits would
// be passed (ErrLimit).
func (s *Store) Restore(ctx context.Context, list string, texts []string) (restored, items []Item, err error) {
	name := Name(list)
	err = s.update(ctx, func(f *file) error {
		f.Removed = recent(f.Removed, s.now())
		var from []int // indexes in f.Removed, of the list's entries
		for i, r := range f.Removed {
			if r.List == name {
				from = append(from, i)
			}
		}
		if len(from) == 0 {
			return fmt.Errorf("%w: nothing was removed from the %s list in the last %d days", ErrNoItem, shown(name), KeepRemoved/(24*time.Hour))
		}
		take := map[int]bool{}
		if len(texts) == 0 {
			last := f.Removed[from[len(from)-1]].Removal
			for _, i := range from {
				if f.Removed[i].Removal == last {
					take[i] = true
				}
			}
		}
		// The latest removal of an item is the one put back: search the
		// entries newest first.
		cands := make([]Item, len(from))
		for j, i := range from {
			cands[len(from)-1-j] = f.Removed[i].ListItem
		}
		for _, text := range texts {
			j, err := match(cands, text)
			if err != nil {
				return fmt.Errorf("%w (among the items removed from the %s list lately)", err, shown(name))
			}
			take[from[len(from)-1-j]] = true
		}
		var back []Item
		keep := f.Removed[:0:0]
		for i, r := range f.Removed {
			if take[i] {
				back = append(back, r.ListItem)
			} else {
				keep = append(keep, r)
			}
		}
		var err error
		if restored, err = put(f, name, back); err != nil {
			return err
		}
		f.Removed = keep
		items = slices.Clone(f.Lists[name])
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("lists: restore: %w", err)
	}
	return restored, items, nil
}

// RemovedFrom returns the items removed from list in the last KeepRemoved
// that can be put back, newest first; an empty list means from every
// list.
func (s *Store) RemovedFrom(ctx context.Context, list string) ([]Removed, error) {
	name := Name(list)
	var out []Removed
	err := s.view(ctx, func(f *file) {
		for _, r := range recent(f.Removed, s.now()) {
			if name == "" || r.List == name {
				out = append(out, r)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("lists: removed: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}
