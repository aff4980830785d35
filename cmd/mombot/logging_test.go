package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/internal/logging"
)

// newLogger returns a text logger on w at the level named (default info),
// for tests that read their logs as key=value lines.
func newLogger(w io.Writer, level string) *slog.Logger {
	l, err := logging.ParseLevel(level)
	if err != nil {
		l = slog.LevelInfo
	}
	return logging.New(w, &logging.Options{Level: l, Format: logging.Text})
}

// The logger of each command, from MOMBOT_LOG_LEVEL and MOMBOT_LOG_FORMAT:
// which levels it writes, and in which format. The writer here is a
// buffer, not a terminal, so the default format is JSON.
func TestProcessLogger(t *testing.T) {
	tests := []struct {
		cmd, level, format string
		lowest             slog.Level
		json               bool
	}{
		{"serve", "", "", slog.LevelInfo, true},
		{"ask", "", "", slog.LevelWarn, true},
		{"chat", "", "", slog.LevelWarn, true},
		{"ask", "debug", "json", slog.LevelDebug, true},
		{"serve", " ERROR ", "JSON", slog.LevelError, true},
		{"history", "warn", "text", slog.LevelWarn, false},
		{"serve", "", "text", slog.LevelInfo, false},
	}
	for _, tt := range tests {
		vars := map[string]string{"MOMBOT_LOG_LEVEL": tt.level, "MOMBOT_LOG_FORMAT": tt.format}
		var buf bytes.Buffer
		l, err := processLogger(&buf, func(k string) string { return vars[k] }, tt.cmd)
		if err != nil {
			t.Errorf("%s level=%q format=%q: %v", tt.cmd, tt.level, tt.format, err)
			continue
		}
		var written []slog.Level
		for _, lv := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			before := buf.Len()
			l.Log(context.Background(), lv, "line", "n", 1)
			if buf.Len() > before {
				written = append(written, lv)
			}
		}
		if len(written) == 0 || written[0] != tt.lowest {
			t.Errorf("%s level=%q: wrote %v, want from %v up", tt.cmd, tt.level, written, tt.lowest)
		}
		first, _, _ := strings.Cut(buf.String(), "\n")
		isJSON := json.Valid([]byte(first))
		if isJSON != tt.json {
			t.Errorf("%s format=%q: wrote %q, want JSON %v", tt.cmd, tt.format, first, tt.json)
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
		for k, v := range vars {
			if !strings.Contains(msg, k+`="`+v+`"`) {
				t.Errorf("%v: the error does not name %s and its value: %q", vars, k, msg)
			}
		}
		if !strings.Contains(msg, " or ") || strings.Count(msg, "\n") != 1 {
			t.Errorf("%v: the error is not one line naming the choices: %q", vars, msg)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: the command ran: %q", vars, stdout.String())
		}
	}
}

// go-redis's own lines, from the real client inside the real binary, come
// out as records of the process's logger: mombot run with its stderr on a
// pipe (as in a container or under a service manager, so JSON by default)
// and a Redis URL where nothing listens. go-redis's pool logs that it
// cannot dial before the command's error comes back; without the routing
// that line would be go-redis's own "redis: 2026/11/24 ... pool.go:..."
// text on stderr. At MOMBOT_LOG_LEVEL=debug every line on stderr must be
// a JSON record, but for the command's one-line error at the end, and the
// URL's password must not be among them. At the default level the error is
// the only line: go-redis's line would say again what it says.
func TestGoRedisLinesAreSlogRecords(t *testing.T) {
	bin := buildMombot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const password = "redis-pw-7c1e9d"
	dir := t.TempDir()
	historyList := func(env ...string) (stdout, stderr bytes.Buffer) {
		t.Helper()
		cmd := exec.Command(bin, "history", "list", "--store", "redis://:"+password+"@"+addr+"/0")
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "MOMBOT_CONFIG=" + filepath.Join(dir, "none.json")}, env...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("history list on a Redis nobody serves: %v, want exit 1\nstderr:\n%s", err, stderr.String())
		}
		return stdout, stderr
	}

	_, stderr := historyList()
	if got := stderr.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "mombot: ") || !strings.Contains(got, "connection refused") {
		t.Errorf("at the default level, stderr is not the one line of the error:\n%s", got)
	}

	stdout, stderr := historyList("MOMBOT_LOG_LEVEL=debug")

	var lines []string
	for sc := bufio.NewScanner(&stderr); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-1], "mombot: ") {
		t.Fatalf("stderr should be log records and then the command's error:\n%s", strings.Join(lines, "\n"))
	}
	var pool map[string]any
	for i, line := range lines[:len(lines)-1] {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("stderr line %d is not a JSON record (raw go-redis output?): %q", i+1, line)
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k]; !ok {
				t.Errorf("stderr line %d has no %s: %q", i+1, k, line)
			}
		}
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, "go-redis: connection pool: failed to dial") {
			pool = m
		}
	}
	if pool == nil {
		t.Fatalf("no record of go-redis's pool failure on stderr:\n%s", strings.Join(lines, "\n"))
	}
	if msg := pool["msg"].(string); pool["level"] != "DEBUG" || !strings.Contains(msg, addr) || !strings.Contains(msg, "connection refused") {
		t.Errorf("go-redis's record: %v; want DEBUG naming %s and the refusal", pool, addr)
	}
	if strings.Contains(stderr.String()+stdout.String(), password) {
		t.Errorf("the Redis password reached the output:\n%s", stderr.String())
	}
}

// ask prints the reply with nothing before it on stderr by default (the
// assistant's "message handled" line is INFO); MOMBOT_LOG_LEVEL=info
// brings the INFO lines back, as JSON records off a terminal.
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
	if !strings.Contains(stderr, `"level":"INFO"`) {
		t.Errorf("ask at MOMBOT_LOG_LEVEL=info logged no INFO record:\n%s", stderr)
	}
}
