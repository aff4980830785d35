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
func (s *Store) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	total := 0
	for {
		n, err := s.exec(ctx, querySweep, cutoff.UnixNano(), sweepBatch)
		total += int(n)
		if err != nil {
			return total, fmt.Errorf("sqlite: sweep: %w", err)
		}
		if n < sweepBatch {
			return total, nil
		}
	}
}

// sweepLoop sweeps conversations inactive for more than timeout at once and
// then every interval, until ctx ends.
func (s *Store) sweepLoop(ctx context.Context, every, timeout time.Duration, now func() time.Time) {
	defer close(s.swept)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		n, err := s.Sweep(ctx, now().Add(-timeout-time.Nanosecond))
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.log.ErrorContext(ctx, "sqlite: sweep of expired conversations failed", "deleted", n, "err", err)
		case n > 0:
			s.log.InfoContext(ctx, "sqlite: swept expired conversations", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
