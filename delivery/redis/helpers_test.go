package redis_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	conversationredis "github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/internal/redistest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// loggers remembers the logger each test store was opened with, for the
// lockers on it.
var loggers sync.Map // *conversationredis.Store -> *slog.Logger

func logOf(s *conversationredis.Store) *slog.Logger {
	if l, ok := loggers.Load(s); ok {
		return l.(*slog.Logger)
	}
	return quiet
}

// open opens a conversation store under prefix, whose client the
// delivery backend shares, and closes it when the test ends.
func open(tb testing.TB, prefix string, opts *conversationredis.Options) *conversationredis.Store {
	tb.Helper()
	var o conversationredis.Options
	if opts != nil {
		o = *opts
	}
	o.Prefix = prefix
	if o.Logger == nil {
		o.Logger = quiet
	}
	s, err := conversationredis.Open(context.Background(), redistest.URL(tb), &o)
	if err == nil {
		loggers.Store(s, o.Logger)
	}
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}
