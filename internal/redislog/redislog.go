// Package redislog routes go-redis's own log lines through a
// [log/slog.Logger], so that they come out in the process's format and at
// its level instead of as unstructured lines on stderr.
//
// go-redis logs what its callers do not see as errors: a connection pool
// that cannot dial (before the command's error comes back), a connection
// it had to drop, a duration it truncated. It keeps one logger for the
// whole process, which [Route] sets.
package redislog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// Logger adapts a *slog.Logger to go-redis's logger interface: each line
// becomes one record at Level, with the message "go-redis: " and
// go-redis's text (its own "redis: " prefix dropped). A nil Log means
// slog.Default(); a nil Level means slog.LevelWarn. It is safe for
// concurrent use if the slog.Logger is, as slog's are.
type Logger struct {
	Log   *slog.Logger
	Level slog.Leveler
}

// Printf implements go-redis's logging interface.
func (l Logger) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimPrefix(strings.TrimSpace(fmt.Sprintf(format, v...)), "redis: ")
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	level := slog.LevelWarn
	if l.Level != nil {
		level = l.Level.Level()
	}
	log.Log(ctx, level, "go-redis: "+msg)
}

// Route makes every go-redis client of the process log through l at
// level, from now on; the last call wins. A nil l is ignored, as go-redis
// ignores it. A command whose error says what went wrong routes them at
// debug, since go-redis's lines (a pool that cannot dial) only come before
// that error; a server, whose clients fail in the background, at warn.
func Route(l *slog.Logger, level slog.Level) {
	if l == nil {
		return
	}
	goredis.SetLogger(Logger{Log: l, Level: level})
}
