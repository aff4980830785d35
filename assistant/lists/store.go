package lists

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mombot/mombot/internal/atomicfile"
)

// Item is one entry of a list.
type Item struct {
	Text    string    `json:"text"`
	AddedBy string    `json:"added_by,omitempty"` // the family member's name; empty for others
	AddedAt time.Time `json:"added_at"`
}

// Summary names a list and how many items it has.
type Summary struct {
	Name  string
	Items int
}

// ErrNoList is returned when a list does not exist or is empty.
var ErrNoList = errors.New("no such list")

// ErrNoItem is returned when an item to remove is not on the list.
var ErrNoItem = errors.New("no such item")

// MaxItems bounds one list, and MaxItemLen one item's text, so that a
// confused model cannot grow the file without end.
const (
	MaxItems   = 500
	MaxItemLen = 200
)

// Store is the family's lists in one JSON file. It is safe for concurrent
// use by many goroutines and processes.
type Store struct {
	path string
	now  func() time.Time
	mu   sync.Mutex
}

// file is the JSON layout: {"lists":{"grocery":[{"text":"milk",...}]}}.
type file struct {
	Lists map[string][]Item `json:"lists"`
}

// Open returns the lists kept at path. The file need not exist yet; its
// folder must. now is the clock; nil means time.Now.
func Open(path string, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	// The folder is the data folder, which the first run creates, as the
	// conversation store does.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lists: open: %w", err)
	}
	fi, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("lists: open: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("lists: open: %s is not a folder", filepath.Dir(path))
	}
	s := &Store{path: path, now: now}
	// A save killed mid-write leaves its temporary file behind; remove
	// those under the lock, which every writer holds while it writes.
	unlock, err := lockPath(context.Background(), path+".lock")
	if err != nil {
		return nil, fmt.Errorf("lists: open: %w", err)
	}
	_, err = atomicfile.RemoveTemps(path)
	unlock()
	if err != nil {
		return nil, fmt.Errorf("lists: open: remove temporary files: %w", err)
	}
	if _, err := s.read(); err != nil {
		return nil, fmt.Errorf("lists: open: %w", err)
	}
	return s, nil
}

// Name returns the key a list is kept under: lower case, trimmed, inner
// white space collapsed ("Grocery " and "grocery" are one list).
func Name(list string) string {
	return strings.ToLower(strings.Join(strings.Fields(list), " "))
}

func (s *Store) read() (*file, error) {
	f := &file{Lists: map[string][]Item{}}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, f); err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	if f.Lists == nil {
		f.Lists = map[string][]Item{}
	}
	return f, nil
}

// update runs change on the current lists and saves them if it succeeds,
// holding the in-process and the cross-process lock.
func (s *Store) update(ctx context.Context, change func(*file) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := lockPath(ctx, s.path+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	if err := change(f); err != nil {
		return err
	}
	for k, v := range f.Lists {
		if len(v) == 0 {
			delete(f.Lists, k)
		}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(s.path, append(data, '\n'))
}

// view runs look on the current lists.
func (s *Store) view(look func(*file)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	look(f)
	return nil
}

func cleanItem(text string) (string, error) {
	text = strings.Join(strings.FieldsFunc(text, unicode.IsSpace), " ")
	switch {
	case text == "":
		return "", errors.New("an item must have some text")
	case len(text) > MaxItemLen:
		return "", fmt.Errorf("an item must be at most %d characters", MaxItemLen)
	}
	return text, nil
}

// Add appends items to list, creating it if needed, and returns the list.
// Items already on the list (ignoring case) are not added twice.
func (s *Store) Add(ctx context.Context, list string, items []string, by string) ([]Item, error) {
	name := Name(list)
	if name == "" {
		return nil, errors.New("lists: add: a list needs a name")
	}
	var out []Item
	err := s.update(ctx, func(f *file) error {
		cur := f.Lists[name]
		for _, raw := range items {
			text, err := cleanItem(raw)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(cur, func(it Item) bool { return strings.EqualFold(it.Text, text) }) {
				continue
			}
			if len(cur) >= MaxItems {
				return fmt.Errorf("the %s list is full (%d items)", name, MaxItems)
			}
			cur = append(cur, Item{Text: text, AddedBy: by, AddedAt: s.now().UTC()})
		}
		f.Lists[name] = cur
		out = slices.Clone(cur)
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
// the list as it was before the call. It returns the removed items and the
// list after; it fails, removing nothing, if anything is not found.
func (s *Store) Remove(ctx context.Context, list string, texts []string, positions []int) (removed, left []Item, err error) {
	name := Name(list)
	err = s.update(ctx, func(f *file) error {
		cur, ok := f.Lists[name]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNoList, name)
		}
		drop := map[int]bool{}
		for _, p := range positions {
			if p < 1 || p > len(cur) {
				return fmt.Errorf("%w: there is no item %d; the %s list has %d items", ErrNoItem, p, name, len(cur))
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
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("lists: remove: %w", err)
	}
	return removed, left, nil
}

// RemoveItem removes from list the item whose text is text, ignoring
// case, and nothing else: a page's "remove" button names the item it
// showed, which may be gone since. It returns an error wrapping ErrNoList
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
		f.Lists[name] = slices.Delete(slices.Clone(cur), i, i+1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("lists: remove item: %w", err)
	}
	return nil
}

// Delete removes list and its items. It returns an error wrapping
// ErrNoList when there is no such list.
func (s *Store) Delete(ctx context.Context, list string) error {
	name := Name(list)
	err := s.update(ctx, func(f *file) error {
		if _, ok := f.Lists[name]; !ok {
			return fmt.Errorf("%w: %q", ErrNoList, name)
		}
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
func (s *Store) Items(list string) ([]Item, error) {
	name := Name(list)
	var out []Item
	var ok bool
	if err := s.view(func(f *file) { out, ok = f.Lists[name] }); err != nil {
		return nil, fmt.Errorf("lists: items: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("lists: items: %w: %q", ErrNoList, name)
	}
	return out, nil
}

// Lists returns every non-empty list, by name.
func (s *Store) Lists() ([]Summary, error) {
	var out []Summary
	err := s.view(func(f *file) {
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
