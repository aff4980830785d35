package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.UsageLedger = (*Store)(nil)

// usageKey is one phone's day in the ledger.
type usageKey struct {
	phone string
	day   time.Time // midnight UTC
}

// AddUsage implements [conversation.UsageLedger].
func (s *Store) AddUsage(_ context.Context, phone string, at time.Time, u conversation.Usage) error {
	if skip, err := conversation.CheckAddUsage(phone, u); err != nil || skip {
		if err != nil {
			return fmt.Errorf("memstore: add usage: %w", err)
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usage == nil {
		s.usage = map[usageKey]conversation.Usage{}
	}
	k := usageKey{phone, conversation.UsageDay(at)}
	s.usage[k] = s.usage[k].Add(u)
	return nil
}

// UsageSince implements [conversation.UsageLedger].
func (s *Store) UsageSince(_ context.Context, since time.Time) ([]conversation.DailyUsage, error) {
	from := conversation.UsageDay(since)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []conversation.DailyUsage{}
	for k, u := range s.usage {
		if since.IsZero() || !k.day.Before(from) {
			out = append(out, conversation.DailyUsage{Phone: k.phone, Day: k.day, Usage: u})
		}
	}
	slices.SortFunc(out, conversation.CompareDailyUsage)
	return out, nil
}
