package jsonfile

import (
	"context"
	"fmt"
	"time"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.Replacer = (*Store)(nil)

// Replace implements [conversation.Replacer] in one write of the file. The
// last activity is kept to the microsecond, the file's precision; keys of
// the conversation object that mombot does not know are kept.
func (s *Store) Replace(ctx context.Context, c conversation.Conversation, _ time.Duration) (bool, error) {
	last := c.LastActive.Truncate(time.Microsecond)
	replaced := false
	err := s.update(ctx, func(st *state) error {
		replaced = false
		e := &entry{lastActive: last}
		if old, ok := st.entries[c.Phone]; ok && old.raw == nil {
			if old.lastActive.After(last) {
				return errUnchanged
			}
			e.extra = old.extra
		}
		if err := e.encode(c.Turns, s.loc); err != nil {
			return err
		}
		st.put(c.Phone, e)
		replaced = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("jsonfile: replace: %w", err)
	}
	return replaced, nil
}
