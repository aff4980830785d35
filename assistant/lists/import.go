package lists

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/mombot/mombot/conversation"
)

// ImportedSuffix is added to a lists file's name once [Store.Import] has
// merged it into the store: lists.json becomes lists.json.imported.
const ImportedSuffix = ".imported"

// Import merges the lists file at path, the lists.json of releases that
// kept the lists in a file, into the store, and renames the file to
// path + ImportedSuffix, so that it is imported once. A missing file is
// nothing to import. It returns how many items it added.
//
// Several files (each replica kept its own) merge: an item already on its
// list, in the store or from a file imported before, ignoring case, is kept
// once, as it was first kept; the other items are added at the end of
// their list, in the file's order. Removed items that can still be put
// back are merged too, once each. The limits are not applied: what the
// family had is kept whole, and adding waits until the lists are within
// them, as it does for lists from before the limits. A file that does not
// parse is an error, and nothing is changed or renamed.
//
// Two processes importing the same file at once add its items once: the
// merge of what is there already adds nothing, and the rename that comes
// second finds the file gone.
func (s *Store) Import(ctx context.Context, path string) (added int, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("lists: import: %w", err)
	}
	in, err := conversation.DecodeFamilyLists(data)
	if err != nil {
		return 0, fmt.Errorf("lists: import %s: %w", path, err)
	}
	err = s.mem.UpdateFamilyLists(ctx, func(f *file) error {
		added = merge(f, in)
		f.Removed = recent(f.Removed, s.now())
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("lists: import %s: %w", path, err)
	}
	if err := os.Rename(path, path+ImportedSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return added, fmt.Errorf("lists: import: %w", err)
	}
	return added, nil
}

// merge adds in's items and removed items to f, each once, and returns
// how many items it added to the lists.
func merge(f *file, in file) int {
	names := make([]string, 0, len(in.Lists))
	for k := range in.Lists {
		names = append(names, k)
	}
	sort.Strings(names)
	added := 0
	for _, k := range names {
		items := make([]Item, 0, len(in.Lists[k]))
		for _, it := range in.Lists[k] {
			if it.Text = conversation.OneLine(it.Text); it.Text != "" {
				items = append(items, it)
			}
		}
		added += len(f.Add(Name(k), items))
	}
	// The file's removals are numbered after the store's, so that "put back
	// the last removal" never mixes removals of two replicas.
	next := int64(1)
	for _, r := range f.Removed {
		next = max(next, r.Removal+1)
	}
	renumber := map[int64]int64{}
	for _, r := range in.Removed {
		r.List = Name(r.List)
		if r.List == "" || r.Text == "" || slices.ContainsFunc(f.Removed, func(o Removed) bool {
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
		f.Removed = append(f.Removed, r)
	}
	slices.SortStableFunc(f.Removed, func(a, b Removed) int { return a.RemovedAt.Compare(b.RemovedAt) })
	return added
}
