package lists

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

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
		added = f.Merge(in)
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
