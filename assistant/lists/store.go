package lists

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mombot/mombot/conversation"
)

// Item is one entry of a list.
type Item = conversation.ListItem

// Summary names a list and how many items it has.
type Summary struct {
	Name  string
	Items int
}

// ErrNoList is returned when a list does not exist or is empty.
var ErrNoList = errors.New("no such list")

// ErrNoItem is returned when an item to remove is not on the list, or one
// to put back was not removed lately.
var ErrNoItem = errors.New("no such item")

// ErrLimit is returned when a change would take the lists past one of
// their limits; the error's text says which, and what to do instead.
var ErrLimit = errors.New("over the lists' limits")

// Limits of the lists, so that a confused or misled model cannot grow them
// without end: the family keeps at most MaxLists lists of at most MaxItems
// items each; a list's name has at most MaxNameLen characters and an
// item's text at most MaxItemLen; and the lists, removed items included,
// take at most MaxBytes as stored. A change past a limit is refused whole,
// with an error wrapping ErrLimit.
const (
	MaxLists   = 50
	MaxItems   = 500
	MaxNameLen = 100
	MaxItemLen = 200
	MaxBytes   = 512 << 10
)

// Store is the family's lists, kept in a conversation store (see the
// package doc). It is safe for concurrent use by many goroutines, and by
// the processes and replicas that share the conversation store.
type Store struct {
	mem *conversation.Memory
	now func() time.Time
}

// file is the lists as stored.
type file = conversation.FamilyLists

// limitError is an error wrapping ErrLimit whose text is only what the
// person or the model needs to read.
type limitError struct{ msg string }

func (e *limitError) Error() string        { return e.msg }
func (e *limitError) Is(target error) bool { return target == ErrLimit }

func limitf(format string, args ...any) error {
	return &limitError{msg: fmt.Sprintf(format, args...)}
}

// New returns the family's lists kept in mem's store. now is the clock of
// the items' times and of how long removed items are kept; nil means
// time.Now.
func New(mem *conversation.Memory, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{mem: mem, now: now}
}

// Name returns the key a list is kept under: lower case, trimmed, inner
// white space and control characters collapsed ("Grocery " and "grocery"
// are one list).
func Name(list string) string { return conversation.ListName(list) }

// checkName refuses a name for a new list: empty, or too long.
func checkName(name string) error {
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return errors.New("a list needs a name")
	case n > MaxNameLen:
		return limitf("a list name may be at most %d characters, and this one has %d; use a short name such as \"grocery\"", MaxNameLen, n)
	}
	return nil
}

// shown returns a list's name as messages quote it: cut, should a list
// from before the limits have a longer one.
func shown(name string) string {
	if utf8.RuneCountInString(name) <= MaxNameLen {
		return name
	}
	return string([]rune(name)[:MaxNameLen]) + "…"
}

// update runs change on the current lists and writes them if it
// succeeds, on the condition that nobody changed them meanwhile (else it
// reads them again and runs change again: change must start from what it
// is given each time). The removed items older than KeepRemoved, or past
// MaxRemoved, are dropped, and the oldest others as far as the lists need
// to stay within MaxBytes; a change that adds items and would still take
// the lists past it is refused, while one that removes is not, even when
// the lists are over it from before the limits.
func (s *Store) update(ctx context.Context, change func(*file) error) error {
	return s.mem.UpdateFamilyLists(ctx, func(f *file) error {
		before := f.ItemCount()
		if err := change(f); err != nil {
			return err
		}
		f.Removed = recent(f.Removed, s.now())
		data, err := f.Encode()
		if err != nil {
			return err
		}
		for len(data) > MaxBytes && len(f.Removed) > 0 {
			f.Removed = forget(f.Removed, len(data)-MaxBytes)
			if data, err = f.Encode(); err != nil {
				return err
			}
		}
		if items := f.ItemCount(); len(data) > MaxBytes && items > before {
			return limitf("the lists are full: %d items in %d lists take %d KB, and the most they may take is %d KB; remove items or lists first", items, len(f.Lists), len(data)>>10, MaxBytes>>10)
		}
		return nil
	})
}

// view runs look on the current lists.
func (s *Store) view(ctx context.Context, look func(*file)) error {
	f, err := s.mem.FamilyLists(ctx)
	if err != nil {
		return err
	}
	look(&f)
	return nil
}

func cleanItem(text string) (string, error) {
	text = conversation.OneLine(text)
	switch n := utf8.RuneCountInString(text); {
	case n == 0:
		return "", errors.New("an item must have some text")
	case n > MaxItemLen:
		return "", limitf("an item may be at most %d characters, and this one has %d; keep each item short, one thing to buy or do", MaxItemLen, n)
	}
	return text, nil
}

// put appends items to the list name in f, creating it if needed, unless
// they are on it already (ignoring case), within the limits. It returns
// the items added.
func put(f *file, name string, items []Item) ([]Item, error) {
	cur, ok := f.Lists[name]
	if !ok && len(f.Lists) >= MaxLists {
		return nil, limitf("the family already has %d lists, the most it may keep; add to one of them, or empty one first", len(f.Lists))
	}
	added := f.Add(name, items)
	if len(cur)+len(added) > MaxItems && len(added) > 0 {
		return nil, limitf("the %s list is full (%d items, the most a list may hold); remove some first", shown(name), MaxItems)
	}
	return added, nil
}

// Add appends items to list, creating it if needed, and returns the list.
// Items already on the list (ignoring case) are not added twice. A name or
// an item over its limit, or an item past the list's or the file's, fails
// the whole call with an error wrapping ErrLimit.
func (s *Store) Add(ctx context.Context, list string, items []string, by string) ([]Item, error) {
	name := Name(list)
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("lists: add: %w", err)
	}
	now := s.now().UTC()
	adding := make([]Item, 0, len(items))
	for _, raw := range items {
		text, err := cleanItem(raw)
		if err != nil {
			return nil, fmt.Errorf("lists: add: %w", err)
		}
		adding = append(adding, Item{Text: text, AddedBy: by, AddedAt: now})
	}
	var out []Item
	err := s.update(ctx, func(f *file) error {
		if _, err := put(f, name, adding); err != nil {
			return err
		}
		out = slices.Clone(f.Lists[name])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lists: add: %w", err)
	}
	return out, nil
}

// Remove removes from list the items at positions (1-based, as the list is
// shown) and the items whose text matches one of texts: equal ignoring
// case, or else the only item containing it. Positions and texts refer to
// the list as it was before the call. by is who removes them (see
// [Removed]). It returns the removed items and the list after; it fails,
// removing nothing, if anything is not found.
func (s *Store) Remove(ctx context.Context, list string, texts []string, positions []int, by string) (removed, left []Item, err error) {
	name := Name(list)
	err = s.update(ctx, func(f *file) error {
		removed = nil
		cur, ok := f.Lists[name]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNoList, shown(name))
		}
		drop := map[int]bool{}
		for _, p := range positions {
			if p < 1 || p > len(cur) {
				return fmt.Errorf("%w: there is no item %d; the %s list has %d items", ErrNoItem, p, shown(name), len(cur))
			}
			drop[p-1] = true
		}
		for _, text := range texts {
			i, err := match(cur, text)
			if err != nil {
				return err
			}
			drop[i] = true
		}
		left = cur[:0:0]
		for i, it := range cur {
			if drop[i] {
				removed = append(removed, it)
			} else {
				left = append(left, it)
			}
		}
		f.Lists[name] = left
		s.discard(f, name, removed, by)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("lists: remove: %w", err)
	}
	return removed, left, nil
}

// RemoveItem removes from list the item whose text is text, ignoring
// case, and nothing else: a page's "remove" button names the item it
// showed, which may be gone since. The item is kept among the removed,
// with no one named as removing it. It returns an error wrapping ErrNoList
// or ErrNoItem when there is no such list or item.
func (s *Store) RemoveItem(ctx context.Context, list, text string) error {
	name := Name(list)
	err := s.update(ctx, func(f *file) error {
		cur, ok := f.Lists[name]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNoList, name)
		}
		i := slices.IndexFunc(cur, func(it Item) bool { return strings.EqualFold(it.Text, strings.TrimSpace(text)) })
		if i < 0 {
			return fmt.Errorf("%w: %q is not on the list", ErrNoItem, text)
		}
		s.discard(f, name, cur[i:i+1], "")
		f.Lists[name] = slices.Delete(slices.Clone(cur), i, i+1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("lists: remove item: %w", err)
	}
	return nil
}

// Delete removes list and its items, which are kept among the removed with
// no one named as removing them. It returns an error wrapping ErrNoList
// when there is no such list.
func (s *Store) Delete(ctx context.Context, list string) error {
	name := Name(list)
	err := s.update(ctx, func(f *file) error {
		cur, ok := f.Lists[name]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNoList, shown(name))
		}
		s.discard(f, name, cur, "")
		delete(f.Lists, name)
		return nil
	})
	if err != nil {
		return fmt.Errorf("lists: delete: %w", err)
	}
	return nil
}

func match(items []Item, text string) (int, error) {
	want := strings.ToLower(strings.TrimSpace(text))
	for i, it := range items {
		if strings.ToLower(it.Text) == want {
			return i, nil
		}
	}
	found := -1
	for i, it := range items {
		if want != "" && strings.Contains(strings.ToLower(it.Text), want) {
			if found >= 0 {
				return 0, fmt.Errorf("%w: %q matches more than one item; give its number", ErrNoItem, text)
			}
			found = i
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("%w: %q is not on the list", ErrNoItem, text)
	}
	return found, nil
}

// Items returns list's items, or an error wrapping ErrNoList.
func (s *Store) Items(ctx context.Context, list string) ([]Item, error) {
	name := Name(list)
	var out []Item
	var ok bool
	if err := s.view(ctx, func(f *file) { out, ok = f.Lists[name] }); err != nil {
		return nil, fmt.Errorf("lists: items: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("lists: items: %w: %q", ErrNoList, shown(name))
	}
	return out, nil
}

// Lists returns every non-empty list, by name.
func (s *Store) Lists(ctx context.Context) ([]Summary, error) {
	var out []Summary
	err := s.view(ctx, func(f *file) {
		for k, v := range f.Lists {
			out = append(out, Summary{Name: k, Items: len(v)})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("lists: lists: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
