package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/mombot/mombot/conversation"
)

// Backend is a conversation store as [Metrics.Store] wraps it: the
// conversations, the usage ledger and the recent messages, which every
// store of this module keeps.
type Backend interface {
	conversation.Store
	conversation.UsageLedger
	conversation.RecentMessages
}

// Store wraps s to time each operation and count its failures, by
// operation; an ErrNotFound is an answer, not a failure. The wrapper does
// everything s does: the methods of [Backend], and Sweep and Replace
// ([conversation.Sweeper], [conversation.Replacer]) when s has them, so
// that a caller looking for them on the wrapper finds them as on s.
func (m *Metrics) Store(s Backend) Backend {
	st := &store{m: m, s: s}
	sw, sweeps := s.(conversation.Sweeper)
	r, replaces := s.(conversation.Replacer)
	switch {
	case sweeps && replaces:
		return struct {
			*store
			sweep
			replace
		}{st, sweep{st, sw}, replace{st, r}}
	case sweeps:
		return struct {
			*store
			sweep
		}{st, sweep{st, sw}}
	case replaces:
		return struct {
			*store
			replace
		}{st, replace{st, r}}
	}
	return st
}

type store struct {
	m *Metrics
	s Backend
}

var (
	_ Backend               = (*store)(nil)
	_ conversation.Sweeper  = sweep{}
	_ conversation.Replacer = replace{}
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

func (s *store) AddUsage(ctx context.Context, phone string, at time.Time, u conversation.Usage) error {
	start := time.Now()
	err := s.s.AddUsage(ctx, phone, at, u)
	s.observe("add_usage", start, err)
	return err
}

func (s *store) UsageSince(ctx context.Context, since time.Time) ([]conversation.DailyUsage, error) {
	start := time.Now()
	days, err := s.s.UsageSince(ctx, since)
	s.observe("usage_since", start, err)
	return days, err
}

func (s *store) RememberMessages(ctx context.Context, phone string, now time.Time, msgs ...conversation.RecentMessage) error {
	start := time.Now()
	err := s.s.RememberMessages(ctx, phone, now, msgs...)
	s.observe("remember", start, err)
	return err
}

func (s *store) RecallMessage(ctx context.Context, phone, id string, now time.Time) (conversation.RecentMessage, error) {
	start := time.Now()
	msg, err := s.s.RecallMessage(ctx, phone, id, now)
	s.observe("recall", start, err)
	return msg, err
}

func (s *store) ForgetMessages(ctx context.Context, phone string) error {
	start := time.Now()
	err := s.s.ForgetMessages(ctx, phone)
	s.observe("forget", start, err)
	return err
}

// Close closes the store; it is not timed.
func (s *store) Close() error { return s.s.Close() }

// sweep is the wrapper's Sweep, for a store that is a Sweeper.
type sweep struct {
	s  *store
	sw conversation.Sweeper
}

func (w sweep) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	start := time.Now()
	n, err := w.sw.Sweep(ctx, cutoff)
	w.s.observe("sweep", start, err)
	return n, err
}

// replace is the wrapper's Replace, for a store that is a Replacer.
type replace struct {
	s *store
	r conversation.Replacer
}

func (w replace) Replace(ctx context.Context, c conversation.Conversation, timeout time.Duration) (bool, error) {
	start := time.Now()
	ok, err := w.r.Replace(ctx, c, timeout)
	w.s.observe("replace", start, err)
	return ok, err
}
