package config

import (
	"strings"
	"testing"

	"github.com/mombot/mombot/assistant"
)

// The window and lifetime settings come from mombot.json, each overridden
// by its environment variable.
func TestWindowConfig(t *testing.T) {
	c, err := Load(writeConfig(t, `{"window": {"max_turns": 8, "low_turns": 4, "max_tokens": 20000, "low_tokens": 6000, "min_turns": 3}, "cache_ttl": "1h"}`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MOMBOT_WINDOW_LOW_TURNS": "5", "MOMBOT_CACHE_TTL": "5m"}
	o, ttl, err := c.WindowOptions(func(k string) string { return env[k] }, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := assistant.WindowOptions{MaxTurns: 8, LowTurns: 5, MaxTokens: 20000, LowTokens: 6000, MinTurns: 3}
	if o != want || ttl != "5m" {
		t.Errorf("got %+v, %q; want %+v, \"5m\"", o, ttl, want)
	}
	// Nothing set means the defaults.
	o, ttl, err = (&File{}).WindowOptions(func(string) string { return "" }, 10)
	if err != nil || o != (assistant.WindowOptions{}) || ttl != "" {
		t.Errorf("empty: got %+v, %q, %v", o, ttl, err)
	}
}

// Bad window settings are one-line errors at start.
func TestWindowConfigErrors(t *testing.T) {
	tests := []struct {
		file string
		env  map[string]string
		want string
	}{
		{`{"window": {"max_turns": 4, "low_turns": 6}}`, nil, "config: window low turns (6) must not be above its max turns (4)"},
		{`{"window": {"max_tokens": 1000, "low_tokens": 2000}}`, nil, "config: window low tokens (2000) must not be above its max tokens (1000)"},
		{`{"window": {"min_turns": 12}}`, nil, "config: window min turns (12) must not be above the memory's turn cap (10)"},
		{`{"window": {"max_tokens": -5}}`, nil, "config: window max tokens must not be negative, got -5"},
		{`{"cache_ttl": "forever"}`, nil, `config: cache ttl must be "auto", "5m" or "1h", got "forever"`},
		{`{}`, map[string]string{"MOMBOT_CACHE_TTL": "10m"}, `config: cache ttl must be "auto", "5m" or "1h", got "10m"`},
		{`{}`, map[string]string{"MOMBOT_WINDOW_MIN_TURNS": "-1"}, `MOMBOT_WINDOW_MIN_TURNS: want a whole number, 0 for the default, got "-1"`},
		{`{}`, map[string]string{"MOMBOT_WINDOW_MAX_TOKENS": "lots"}, `MOMBOT_WINDOW_MAX_TOKENS: want a whole number, 0 for the default, got "lots"`},
	}
	for _, tt := range tests {
		c, err := Load(writeConfig(t, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = c.WindowOptions(func(k string) string { return tt.env[k] }, 10)
		if err == nil || err.Error() != tt.want || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %v: got %v, want %s", tt.file, tt.env, err, tt.want)
		}
	}
	if _, err := Load(writeConfig(t, `{"window": {"high": 3}}`)); err == nil || !strings.Contains(err.Error(), `:1:13: unknown key "high"`) {
		t.Errorf("unknown window key: %v", err)
	}
}

// The assistant's options gather the file's settings, its window with the
// environment's overrides, and the transcriber with the key from the
// environment; a mistaken override is the error.
func TestAssistantOptions(t *testing.T) {
	c, err := Load(writeConfig(t, `{"model": "claude-opus-5", "timezone": "Europe/Paris", "family": {"+14155551234": {"name": "Erin"}},
		"window": {"max_turns": 8, "low_turns": 4}, "cache_ttl": "1h",
		"transcription": {"url": "https://api.groq.com/openai/v1", "model": "whisper-large-v3-turbo"}}`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MOMBOT_WINDOW_LOW_TURNS": "5", TranscriptionKeyEnv: "gsk_secret"}
	o, err := c.AssistantOptions(func(k string) string { return env[k] }, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	if o.Model != "claude-opus-5" || o.Location.String() != "Europe/Paris" || o.Family["+14155551234"].Name != "Erin" {
		t.Errorf("model %q, zone %v, family %v", o.Model, o.Location, o.Family)
	}
	if o.Window.MaxTurns != 8 || o.Window.LowTurns != 5 || o.CacheTTL != "1h" {
		t.Errorf("window %+v, cache TTL %q; want 8 and 5 turns, 1h", o.Window, o.CacheTTL)
	}
	if o.Transcriber == nil {
		t.Error("no transcriber")
	}
	env["MOMBOT_WINDOW_LOW_TURNS"] = "many"
	if _, err := c.AssistantOptions(func(k string) string { return env[k] }, 10, false); err == nil || !strings.Contains(err.Error(), "MOMBOT_WINDOW_LOW_TURNS") {
		t.Errorf("a mistaken override: %v", err)
	}
}
