package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/mombot/mombot/conversation"
)

// Store wraps s to time each operation and count its failures, by
// operation; an ErrNotFound is an answer, not a failure. The wrapper is a
// conversation.Sweeper when s is one.
func (m *Metrics) Store(s conversation.Store) conversation.Store {
	st := &store{m: m, s: s}
	if sw, ok := s.(conversation.Sweeper); ok {
		return &sweepingStore{store: st, sw: sw}
	}
	return st
}

type store struct {
	m *Metrics
	s conversation.Store
}

var (
	_ conversation.Store   = (*store)(nil)
	_ conversation.Sweeper = (*sweepingStore)(nil)
)

// observe records an operation begun at start that returned err.
func (s *store) observe(op string, start time.Time, err error) {
	s.m.storeSeconds.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, conversation.ErrNotFound) {
		s.m.storeErrors.WithLabelValues(op).Inc()
	}
}

func (s *store) Load(ctx context.Context, phone string) (conversation.Conversation, error) {
	start := time.Now()
	c, err := s.s.Load(ctx, phone)
	s.observe("load", start, err)
	return c, err
}

func (s *store) Append(ctx context.Context, phone string, turn conversation.Turn, now time.Time, lim conversation.Limits) error {
	start := time.Now()
	err := s.s.Append(ctx, phone, turn, now, lim)
	s.observe("append", start, err)
	return err
}

func (s *store) Delete(ctx context.Context, phone string) error {
	start := time.Now()
	err := s.s.Delete(ctx, phone)
	s.observe("delete", start, err)
	return err
}

func (s *store) Expire(ctx context.Context, phone string, cutoff time.Time) error {
	start := time.Now()
	err := s.s.Expire(ctx, phone, cutoff)
	s.observe("expire", start, err)
	return err
}

func (s *store) List(ctx context.Context) ([]conversation.Summary, error) {
	start := time.Now()
	l, err := s.s.List(ctx)
	s.observe("list", start, err)
	return l, err
}

// Close closes the store; it is not timed.
func (s *store) Close() error { return s.s.Close() }

type sweepingStore struct {
	*store
	sw conversation.Sweeper
}

func (s *sweepingStore) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	start := time.Now()
	n, err := s.sw.Sweep(ctx, cutoff)
	s.observe("sweep", start, err)
	return n, err
}
