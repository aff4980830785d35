// Package memstore is a [conversation.Store] in process memory: the
// reference backend, for tests and for a process that needs no persistence.
package memstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mombot/mombot/conversation"
)

// Store keeps records in memory. It is safe for concurrent use. The zero
// value is not usable; call New.
type Store struct {
	mu      sync.Mutex
	records map[conversation.Kind]map[string]conversation.Record
	last    int64 // the last version given out
}

var _ conversation.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{records: map[conversation.Kind]map[string]conversation.Record{}}
}

// Get implements [conversation.Store].
func (s *Store) Get(_ context.Context, kind conversation.Kind, key string) (conversation.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[kind][key]
	if !ok {
		return conversation.Record{}, fmt.Errorf("memstore: get %s %q: %w", kind, key, conversation.ErrNotFound)
	}
	r.Data = bytes.Clone(r.Data)
	return r, nil
}

// Put implements [conversation.Store]. keep is ignored: the records live as
// long as the process.
func (s *Store) Put(_ context.Context, kind conversation.Kind, rec conversation.Record, _ time.Duration) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records[kind][rec.Key].Version != rec.Version {
		return 0, fmt.Errorf("memstore: put %s %q: %w", kind, rec.Key, conversation.ErrConflict)
	}
	if s.records[kind] == nil {
		s.records[kind] = map[string]conversation.Record{}
	}
	s.last++
	s.records[kind][rec.Key] = conversation.Record{Key: rec.Key, Data: bytes.Clone(rec.Data), Version: s.last}
	return s.last, nil
}

// Delete implements [conversation.Store].
func (s *Store) Delete(_ context.Context, kind conversation.Kind, key string, version int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[kind][key]
	switch {
	case !ok:
		return fmt.Errorf("memstore: delete %s %q: %w", kind, key, conversation.ErrNotFound)
	case version != 0 && r.Version != version:
		return fmt.Errorf("memstore: delete %s %q: %w", kind, key, conversation.ErrConflict)
	}
	delete(s.records[kind], key)
	return nil
}

// List implements [conversation.Store].
func (s *Store) List(_ context.Context, kind conversation.Kind, prefix string) ([]conversation.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []conversation.Record
	for k, r := range s.records[kind] {
		if strings.HasPrefix(k, prefix) {
			r.Data = bytes.Clone(r.Data)
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b conversation.Record) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Scrub implements [conversation.Store]: a deleted record's data is gone
// from the store's maps once the garbage collector reclaims it.
func (s *Store) Scrub(context.Context) error { return nil }

// Close implements [conversation.Store]. The records stay: a store opened
// again on the same value finds them, as a restart would.
func (s *Store) Close() error { return nil }
