// Package memstore is a conversation store held in process memory only. It
// forgets everything when the process ends, so it suits tests and throw-away
// sessions, not a deployment; it also serves as the reference store of the
// conformance suite.
package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mombot/mombot/conversation"
)

var _ conversation.Store = (*Store)(nil)

// Store is an in-memory [conversation.Store]. Its zero value is not usable;
// use [New].
type Store struct {
	mu    sync.Mutex
	convs map[string]conversation.Conversation
	// ids holds the tool_use ids of each stored turn, by phone, in step
	// with convs, for Append's check.
	ids   map[string][][]string
	usage map[usageKey]conversation.Usage // the ledger, see usage.go
}

// New returns an empty store.
func New() *Store {
	return &Store{convs: map[string]conversation.Conversation{}, ids: map[string][][]string{}}
}

func clone(c conversation.Conversation) conversation.Conversation {
	turns := make([]conversation.Turn, len(c.Turns))
	for i, t := range c.Turns {
		turns[i] = t.Clone()
	}
	c.Turns = turns
	return c
}

// Load implements [conversation.Store].
func (s *Store) Load(_ context.Context, phone string) (conversation.Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[phone]
	if !ok {
		return conversation.Conversation{}, fmt.Errorf("memstore: %w", conversation.ErrNotFound)
	}
	return clone(c), nil
}

// Append implements [conversation.Store].
func (s *Store) Append(_ context.Context, phone string, turn conversation.Turn, now time.Time, lim conversation.Limits) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[phone]
	ids := turn.ToolUseIDs()
	kept := s.ids[phone][len(c.Turns)-conversation.KeptTurns(len(c.Turns), c.LastActive, now, lim):]
	if len(ids) > 0 {
		var inUse []string
		for _, own := range kept {
			inUse = append(inUse, own...)
		}
		if err := conversation.CheckToolIDs(ids, inUse); err != nil {
			return fmt.Errorf("memstore: %w", err)
		}
	}
	c.Phone = phone
	c.Turns = conversation.AppendTurn(c.Turns, c.LastActive, turn.Clone(), now, lim)
	c.LastActive = now
	s.convs[phone] = c
	// AppendTurn keeps the last of the kept turns and the new one, as
	// many as it returns.
	s.ids[phone] = append(slices.Clone(kept), ids)[len(kept)+1-len(c.Turns):]
	return nil
}

// Delete implements [conversation.Store].
func (s *Store) Delete(_ context.Context, phone string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.convs[phone]; !ok {
		return fmt.Errorf("memstore: %w", conversation.ErrNotFound)
	}
	delete(s.convs, phone)
	delete(s.ids, phone)
	return nil
}

// Expire implements [conversation.Store].
func (s *Store) Expire(_ context.Context, phone string, cutoff time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[phone]; ok && !c.LastActive.After(cutoff) {
		delete(s.convs, phone)
		delete(s.ids, phone)
	}
	return nil
}

// List implements [conversation.Store].
func (s *Store) List(context.Context) ([]conversation.Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]conversation.Summary, 0, len(s.convs))
	for _, c := range s.convs {
		out = append(out, conversation.Summary{Phone: c.Phone, LastActive: c.LastActive, Turns: len(c.Turns)})
	}
	slices.SortFunc(out, func(a, b conversation.Summary) int { return strings.Compare(a.Phone, b.Phone) })
	return out, nil
}

// Close implements [conversation.Store]; the contents stay for the next
// Memory that uses s, like a file would.
func (s *Store) Close() error { return nil }
