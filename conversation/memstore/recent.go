package memstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.RecentMessages = (*Store)(nil)

// recentMessages are the recent messages of every phone, apart from the
// conversations and under their own lock.
type recentMessages struct {
	mu     sync.Mutex
	phones map[string][]conversation.RecentMessage // oldest first
}

// RememberMessages implements [conversation.RecentMessages].
func (s *Store) RememberMessages(_ context.Context, phone string, now time.Time, msgs ...conversation.RecentMessage) error {
	add, skip, err := conversation.CheckRemember(phone, now, msgs)
	if err != nil || skip {
		return err
	}
	r := &s.recent
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.phones == nil {
		r.phones = map[string][]conversation.RecentMessage{}
	}
	kept := r.phones[phone][:len(r.phones[phone]):len(r.phones[phone])]
	for _, m := range add {
		replaced := false
		for i := range kept {
			if kept[i].ID == m.ID {
				kept[i], replaced = m, true
			}
		}
		if !replaced {
			kept = append(kept, m)
		}
	}
	r.phones[phone] = conversation.PruneRecent(kept, now)
	return nil
}

// RecallMessage implements [conversation.RecentMessages].
func (s *Store) RecallMessage(_ context.Context, phone, id string, now time.Time) (conversation.RecentMessage, error) {
	r := &s.recent
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.phones[phone] {
		if m.ID == id && !conversation.RecentExpired(m.At, now) {
			return m, nil
		}
	}
	return conversation.RecentMessage{}, fmt.Errorf("memstore: recent message: %w", conversation.ErrNotFound)
}

// ForgetMessages implements [conversation.RecentMessages].
func (s *Store) ForgetMessages(_ context.Context, phone string) error {
	r := &s.recent
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.phones, phone)
	return nil
}
