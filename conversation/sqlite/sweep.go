package sqlite

import (
	"context"
	"fmt"
	"time"
)

// sweepBatch is the number of conversations one sweep statement deletes, so
// that a sweep of many holds the write lock for short spells and saves in
// other processes go on in between.
const sweepBatch = 500

// Sweep deletes every conversation last active at or before cutoff, with its
// turns, and returns how many it deleted. To remove exactly the conversations
// a [conversation.Memory] with timeout d considers expired at now, pass
// now.Add(-d - time.Nanosecond): expiry is strictly more than d.
//
// Sweep deletes in batches, each its own transaction; when ctx ends or a batch
// fails it returns the number deleted so far with the error.
//
// The store runs no sweep of its own: [conversation.Memory.Sweep] calls this
// with the memory's timeout and clock, and mombot serve does so every ten
// minutes for the JSON and SQLite stores alike.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	total := 0
	for {
		n, err := s.exec(ctx, querySweep, cutoff.UnixNano(), sweepBatch)
		total += int(n)
		if err != nil {
			return total, fmt.Errorf("sqlite: sweep: %w", plain(s.path, err))
		}
		if n < sweepBatch {
			return total, nil
		}
	}
}
