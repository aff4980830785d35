package conversation

import (
	"context"
	"time"
)

// Replacer is implemented by stores that can put a whole conversation in
// place in one atomic step, as copying a conversation between stores
// (mombot history migrate) needs: deleting and appending turn by turn would
// leave a partial conversation behind a crash, and would overwrite turns
// saved in the meantime.
type Replacer interface {
	// Replace makes c the whole of c.Phone's conversation, its last
	// activity and every one of its turns, unless the store holds a
	// conversation for c.Phone last active after c.LastActive (compared at
	// the precision the store keeps): that one is newer than the copy, is
	// kept, and Replace returns false. The check and the write are one
	// atomic step: a reader sees the old conversation or the new one, never
	// a mix, a concurrent Append is kept or replaced whole, and on error
	// nothing is changed.
	//
	// Replace applies no turn cap and does not validate c; its turns
	// should come from another store's Load. Stores whose keys expire
	// (Redis) give them timeout as their lifetime, from now.
	Replace(ctx context.Context, c Conversation, timeout time.Duration) (replaced bool, err error)
}
