package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// quietCommands log at warn by default: their output is the reply, which
// INFO lines would only precede.
var quietCommands = map[string]bool{"ask": true, "chat": true}

// logSettings are the logger's settings from the environment:
// MOMBOT_LOG_LEVEL (debug, info, warn, error; default info, warn for ask
// and chat) and MOMBOT_LOG_FORMAT (text or json; default text, which
// compose.yaml and the container image change to json).
type logSettings struct {
	level slog.Level
	json  bool
}

// parseLogSettings reads the settings for the command cmd; a value it
// does not know is a one-line error naming the variable and the choices.
func parseLogSettings(getenv func(string) string, cmd string) (logSettings, error) {
	s := logSettings{level: slog.LevelInfo}
	if quietCommands[cmd] {
		s.level = slog.LevelWarn
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("MOMBOT_LOG_LEVEL"))); v {
	case "":
	case "debug":
		s.level = slog.LevelDebug
	case "info":
		s.level = slog.LevelInfo
	case "warn", "warning":
		s.level = slog.LevelWarn
	case "error":
		s.level = slog.LevelError
	default:
		return s, usagef("MOMBOT_LOG_LEVEL=%q: not a level; use debug, info, warn or error", clip(v))
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("MOMBOT_LOG_FORMAT"))); v {
	case "", "text":
	case "json":
		s.json = true
	default:
		return s, usagef("MOMBOT_LOG_FORMAT=%q: not a format; use text or json", clip(v))
	}
	return s, nil
}

// clip shortens a mistaken value to keep the error on one short line.
func clip(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

// logger returns a logger writing to w with the settings.
func (s logSettings) logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: s.level}
	if s.json {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// processLogger returns the logger of the command cmd, from the
// environment, and routes go-redis's own log lines through it.
func processLogger(w io.Writer, getenv func(string) string, cmd string) (*slog.Logger, error) {
	s, err := parseLogSettings(getenv, cmd)
	if err != nil {
		return nil, err
	}
	l := s.logger(w)
	// go-redis writes its own lines (a pool that cannot dial, a
	// connection it had to drop) to stderr with the standard log package;
	// the logger is process-wide, so the last command run sets it.
	goredis.SetLogger(redisLogger{l})
	return l, nil
}

// newLogger returns a text logger on w at the level named (default info),
// for tests and callers without an environment.
func newLogger(w io.Writer, level string) *slog.Logger {
	s, err := parseLogSettings(func(k string) string {
		if k == "MOMBOT_LOG_LEVEL" {
			return level
		}
		return ""
	}, "")
	if err != nil {
		s = logSettings{level: slog.LevelInfo}
	}
	return s.logger(w)
}

// redisLogger adapts a slog.Logger to go-redis's logger interface. What
// go-redis logs is a connection or pool problem, so it goes at warn.
type redisLogger struct{ log *slog.Logger }

// Printf implements go-redis's internal.Logging.
func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.log.WarnContext(ctx, "go-redis: "+strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "))
}
