package main

import (
	"io"
	"log/slog"

	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/internal/logging"
	"github.com/mombot/mombot/internal/redislog"
)

// quietCommands log at warn by default: their output is the reply, which
// INFO lines would only precede.
var quietCommands = map[string]bool{"ask": true, "chat": true}

// processLogger returns the logger of the command cmd on w, from
// MOMBOT_LOG_LEVEL (default info, warn for ask and chat) and
// MOMBOT_LOG_FORMAT (text or json; by default text when w is a terminal,
// JSON otherwise), and routes go-redis's own lines through it (at debug but
// for serve, see redislog.Route). A value it does not know is a one-line
// usage error naming the variable.
func processLogger(w io.Writer, getenv func(string) string, cmd string) (*slog.Logger, error) {
	level := slog.LevelInfo
	if quietCommands[cmd] {
		level = slog.LevelWarn
	}
	if v := getenv("MOMBOT_LOG_LEVEL"); v != "" {
		var err error
		if level, err = logging.ParseLevel(v); err != nil {
			return nil, cli.Usagef("MOMBOT_LOG_LEVEL=%v", err)
		}
	}
	format, err := logging.ParseFormat(getenv("MOMBOT_LOG_FORMAT"))
	if err != nil {
		return nil, cli.Usagef("MOMBOT_LOG_FORMAT=%v", err)
	}
	l := logging.New(w, &logging.Options{Level: level, Format: format})
	// The logger is process-wide in go-redis: the last command run sets it.
	// A command other than serve reports its Redis failure as its one-line
	// error; go-redis's line about it would come first, as a second line.
	redisLevel := slog.LevelDebug
	if cmd == "serve" {
		redisLevel = slog.LevelWarn
	}
	redislog.Route(l, redisLevel)
	return l, nil
}
