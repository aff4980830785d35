package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/internal/logging"
)

func TestParseLevel(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want slog.Level
	}{
		{"debug", slog.LevelDebug},
		{"info", slog.LevelInfo},
		{"warn", slog.LevelWarn},
		{"warning", slog.LevelWarn},
		{" ERROR ", slog.LevelError},
		{"Info", slog.LevelInfo},
	} {
		got, err := logging.ParseLevel(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	// A word that names no level is refused with the choices, on one
	// line; the empty word too, since the caller decides the default.
	for _, in := range []string{"verbose", "", "trace", "0", strings.Repeat("x", 200)} {
		_, err := logging.ParseLevel(in)
		if !errors.Is(err, logging.ErrUnknownLevel) {
			t.Errorf("ParseLevel(%q): %v, want ErrUnknownLevel", in, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "debug, info, warn or error") || strings.Contains(msg, "\n") || len(msg) > 100 {
			t.Errorf("ParseLevel(%q): the error should name the choices on one short line: %q", in, msg)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want logging.Format
	}{
		{"", logging.Auto},
		{"auto", logging.Auto},
		{"text", logging.Text},
		{" JSON ", logging.JSON},
	} {
		got, err := logging.ParseFormat(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"logfmt", "yaml", "jsonl"} {
		_, err := logging.ParseFormat(in)
		if !errors.Is(err, logging.ErrUnknownFormat) || !strings.Contains(err.Error(), "text or json") {
			t.Errorf("ParseFormat(%q): %v, want ErrUnknownFormat naming text or json", in, err)
		}
	}
}

// jsonRecord parses one line written by a JSON logger, failing the test if
// it is not one JSON object with time, level and msg.
func jsonRecord(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("not a JSON log line: %v: %q", err, line)
	}
	for _, k := range []string{"time", "level", "msg"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("the JSON line has no %s: %q", k, line)
		}
	}
	return m
}

// Off a terminal (a buffer, a pipe, a file: a container's log, a service
// manager's journal), the default format is JSON, one object a line.
func TestAutoIsJSONOffATerminal(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var buf bytes.Buffer
	for name, w := range map[string]io.Writer{"a buffer": &buf, "a pipe": pw, "a file": file} {
		if got := logging.ResolveFormat(logging.Auto, w); got != logging.JSON {
			t.Errorf("Auto on %s resolves to %v, want json", name, got)
		}
	}

	logging.New(&buf, nil).Info("mombot: serving", "addr", "127.0.0.1:8080")
	m := jsonRecord(t, strings.TrimSpace(buf.String()))
	if m["level"] != "INFO" || m["msg"] != "mombot: serving" || m["addr"] != "127.0.0.1:8080" {
		t.Errorf("the record: %v", m)
	}

	logging.New(pw, &logging.Options{}).Warn("through a pipe", "n", 3)
	pw.Close()
	out, _ := io.ReadAll(pr)
	if m := jsonRecord(t, strings.TrimSpace(string(out))); m["level"] != "WARN" || m["n"] != float64(3) {
		t.Errorf("the record through a pipe: %v", m)
	}
}

// An explicit format wins over the writer.
func TestExplicitFormat(t *testing.T) {
	var buf bytes.Buffer
	logging.New(&buf, &logging.Options{Format: logging.Text}).Info("hello", "k", "v")
	if got := buf.String(); !strings.HasPrefix(got, "time=") || !strings.Contains(got, `level=INFO msg=hello k=v`) {
		t.Errorf("Text on a buffer wrote %q, want a key=value line", got)
	}
	buf.Reset()
	logging.New(&buf, &logging.Options{Format: logging.JSON}).Info("hello")
	jsonRecord(t, strings.TrimSpace(buf.String()))
}

// The level drops the records below it; the zero Options mean info.
func TestLevel(t *testing.T) {
	var buf bytes.Buffer
	l := logging.New(&buf, &logging.Options{Format: logging.JSON})
	l.Debug("dropped")
	l.Info("kept")
	if got := strings.Count(buf.String(), "\n"); got != 1 || strings.Contains(buf.String(), "dropped") {
		t.Errorf("at the default level: %q, want the INFO line only", buf.String())
	}
	buf.Reset()
	l = logging.New(&buf, &logging.Options{Level: slog.LevelWarn, Format: logging.JSON})
	l.Info("dropped")
	l.Warn("kept")
	if strings.Contains(buf.String(), "dropped") || !strings.Contains(buf.String(), "kept") {
		t.Errorf("at warn: %q, want the WARN line only", buf.String())
	}
}

// Durations read the same in both formats, as Go writes them: "24h0m0s",
// not JSON's 86400000000000 nanoseconds, also inside a group and from a
// LogValuer.
func TestDurationsAreStrings(t *testing.T) {
	for _, f := range []logging.Format{logging.JSON, logging.Text} {
		var buf bytes.Buffer
		logging.New(&buf, &logging.Options{Format: f}).Info("serving",
			"took", 1500*time.Millisecond,
			slog.Group("whatsapp", "max_age", 24*time.Hour),
			"window", durationValuer(30*time.Minute))
		got := buf.String()
		if f == logging.JSON {
			m := jsonRecord(t, strings.TrimSpace(got))
			if m["took"] != "1.5s" || m["whatsapp"].(map[string]any)["max_age"] != "24h0m0s" || m["window"] != "30m0s" {
				t.Errorf("JSON record: %s, want took 1.5s, whatsapp.max_age 24h0m0s and window 30m0s as strings", got)
			}
			continue
		}
		for _, want := range []string{"took=1.5s", "whatsapp.max_age=24h0m0s", "window=30m0s"} {
			if !strings.Contains(got, want) {
				t.Errorf("text record %q lacks %s", got, want)
			}
		}
	}
}

type durationValuer time.Duration

func (d durationValuer) LogValue() slog.Value { return slog.DurationValue(time.Duration(d)) }

// Every value, at every level and in either format, is cut to the bound:
// a megabyte in the message, a string, an error, a group's member, a
// logger's With and any other value makes a line of a few kilobytes, which
// says how long the value was; short values are written as they are.
func TestValuesAreBounded(t *testing.T) {
	big := strings.Repeat("é", 500_000) // 1,000,000 bytes, cut inside no character
	attrs := []struct {
		name string
		args []any
	}{
		{"the message", nil},
		{"a string", []any{"mode", big}},
		{"an error", []any{"err", errors.New(big)}},
		{"a group's member", []any{slog.Group("request", "path", big)}},
		{"any other value", []any{"list", strings.Split(big, "")}},
	}
	for _, format := range []logging.Format{logging.Text, logging.JSON} {
		for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			for _, a := range attrs {
				t.Run(format.String()+"/"+level.String()+"/"+a.name, func(t *testing.T) {
					var buf bytes.Buffer
					l := logging.New(&buf, &logging.Options{Level: slog.LevelDebug, Format: format})
					msg := "refused"
					if a.args == nil {
						msg = big
					}
					l.With("short", "kept as it is").Log(context.Background(), level, msg, a.args...)
					line := buf.String()
					if len(line) > 2*logging.DefaultMaxValueBytes {
						t.Errorf("a line of %d bytes, want at most %d", len(line), 2*logging.DefaultMaxValueBytes)
					}
					if !strings.Contains(line, " bytes, cut]") {
						t.Errorf("the line does not say a value was cut: %.200s", line)
					}
					if !strings.Contains(line, "kept as it is") {
						t.Errorf("a short value was not written whole: %.300s", line)
					}
					if format == logging.JSON {
						jsonRecord(t, strings.TrimSpace(line))
					}
				})
			}
		}
	}
	// A logger's own attributes are bounded too.
	var buf bytes.Buffer
	logging.New(&buf, &logging.Options{Format: logging.Text, MaxValueBytes: 100}).With("mode", big).Info("refused")
	if n := buf.Len(); n > 300 {
		t.Errorf("With: a line of %d bytes with MaxValueBytes 100", n)
	}
}
