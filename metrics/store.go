package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/mombot/mombot/conversation"
)

// Store wraps s to time each operation and count its failures, by
// operation and kind of record. An ErrNotFound or ErrConflict is an
// answer, not a failure. The wrapper is a whole [conversation.Store]: every
// record of every kind passes through it.
func (m *Metrics) Store(s conversation.Store) conversation.Store {
	return &store{m: m, s: s}
}

type store struct {
	m *Metrics
	s conversation.Store
}

var _ conversation.Store = (*store)(nil)

// observe records an operation on kind begun at start that returned err.
func (s *store) observe(op string, kind conversation.Kind, start time.Time, err error) {
	s.m.storeSeconds.WithLabelValues(op, string(kind)).Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, conversation.ErrNotFound) && !errors.Is(err, conversation.ErrConflict) {
		s.m.storeErrors.WithLabelValues(op, string(kind)).Inc()
	}
}

func (s *store) Get(ctx context.Context, kind conversation.Kind, key string) (conversation.Record, error) {
	start := time.Now()
	r, err := s.s.Get(ctx, kind, key)
	s.observe("get", kind, start, err)
	return r, err
}

func (s *store) Put(ctx context.Context, kind conversation.Kind, rec conversation.Record, keep time.Duration) (int64, error) {
	start := time.Now()
	v, err := s.s.Put(ctx, kind, rec, keep)
	s.observe("put", kind, start, err)
	return v, err
}

func (s *store) Delete(ctx context.Context, kind conversation.Kind, key string, version int64) error {
	start := time.Now()
	err := s.s.Delete(ctx, kind, key, version)
	s.observe("delete", kind, start, err)
	return err
}

func (s *store) List(ctx context.Context, kind conversation.Kind, prefix string) ([]conversation.Record, error) {
	start := time.Now()
	l, err := s.s.List(ctx, kind, prefix)
	s.observe("list", kind, start, err)
	return l, err
}

func (s *store) Scrub(ctx context.Context) error {
	start := time.Now()
	err := s.s.Scrub(ctx)
	s.observe("scrub", "", start, err)
	return err
}

// Close closes the store; it is not timed.
func (s *store) Close() error { return s.s.Close() }
