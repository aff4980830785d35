package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mombot/mombot/assistant/anthropictest"
)

func TestLogSettings(t *testing.T) {
	tests := []struct {
		cmd, level, format string
		want               slog.Level
		json               bool
	}{
		{"serve", "", "", slog.LevelInfo, false},
		{"ask", "", "", slog.LevelWarn, false},
		{"chat", "", "", slog.LevelWarn, false},
		{"ask", "debug", "json", slog.LevelDebug, true},
		{"serve", " ERROR ", "JSON", slog.LevelError, true},
		{"history", "warn", "text", slog.LevelWarn, false},
	}
	for _, tt := range tests {
		vars := map[string]string{"MOMBOT_LOG_LEVEL": tt.level, "MOMBOT_LOG_FORMAT": tt.format}
		s, err := parseLogSettings(func(k string) string { return vars[k] }, tt.cmd)
		if err != nil {
			t.Errorf("%s level=%q format=%q: %v", tt.cmd, tt.level, tt.format, err)
			continue
		}
		if s.level != tt.want || s.json != tt.json {
			t.Errorf("%s level=%q format=%q: got %v json=%v, want %v json=%v", tt.cmd, tt.level, tt.format, s.level, s.json, tt.want, tt.json)
		}
	}
}

// A mistaken level or format stops the command with one line that names
// the variable and the choices, before anything runs.
func TestUnknownLogSettingsAreOneLineErrors(t *testing.T) {
	for _, vars := range []map[string]string{
		{"MOMBOT_LOG_LEVEL": "verbose"},
		{"MOMBOT_LOG_FORMAT": "logfmt"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"mombot", "version"}, func(k string) string { return vars[k] }, strings.NewReader(""), &stdout, &stderr)
		code := exitCode(err, &stderr)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", vars, code)
		}
		msg := stderr.String()
		for k := range vars {
			if !strings.Contains(msg, k) {
				t.Errorf("%v: the error does not name %s: %q", vars, k, msg)
			}
		}
		if strings.Count(msg, "\n") != 1 {
			t.Errorf("%v: the error is not one line: %q", vars, msg)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: the command ran: %q", vars, stdout.String())
		}
	}
}

// go-redis's own lines go through the process's logger, in its format.
func TestRedisLogsGoThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	l, err := processLogger(&buf, func(k string) string { return map[string]string{"MOMBOT_LOG_FORMAT": "json"}[k] }, "serve")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { goredis.SetLogger(redisLogger{newLogger(&bytes.Buffer{}, "")}) })
	redisLogger{l}.Printf(context.Background(), "redis: connection pool: %s", "failed to dial")
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil {
		t.Fatalf("go-redis's line is not a JSON log line: %v\n%s", err, buf.String())
	}
	if line["level"] != "WARN" || line["msg"] != "go-redis: connection pool: failed to dial" {
		t.Errorf("go-redis's line: %v", line)
	}
}

// ask prints the reply with nothing before it on stderr by default (the
// assistant's "message handled" line is INFO); MOMBOT_LOG_LEVEL=info
// brings the INFO lines back.
func TestAskLogsAtWarnByDefault(t *testing.T) {
	a := newAskEnv(t)
	a.srv.Enqueue(anthropictest.Text("Tacos."), anthropictest.Text("Tacos again."))
	out, stderr, err := a.run("ask", "--from", "+14155551234", "what's for dinner?")
	if err != nil || out != "Tacos.\n" {
		t.Fatalf("ask: %q, %v", out, err)
	}
	if stderr != "" {
		t.Errorf("ask wrote to stderr at the default level:\n%s", stderr)
	}
	a.vars["MOMBOT_LOG_LEVEL"] = "info"
	if _, stderr, err = a.run("ask", "--from", "+14155551234", "and tomorrow?"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "level=INFO") {
		t.Errorf("ask at MOMBOT_LOG_LEVEL=info logged no INFO line:\n%s", stderr)
	}
}
