package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mombot/mombot/assistant"
)

// Window is mombot.json's "window": the marks of the history sent
// with each message (assistant.WindowOptions). A zero or missing value
// means the default; docs/prompt-cache.md says why the
// defaults are what they are.
type Window struct {
	MaxTurns  int `json:"max_turns"`
	LowTurns  int `json:"low_turns"`
	MaxTokens int `json:"max_tokens"`
	LowTokens int `json:"low_tokens"`
	MinTurns  int `json:"min_turns"`
}

// WindowOptions returns the window options and cache lifetime policy of
// the file, each overridden by its environment variable (MOMBOT_WINDOW_*,
// MOMBOT_CACHE_TTL, read with getenv) when set, checked against a memory
// that keeps maxTurns turns. Every mistake is a one-line error.
func (c *File) WindowOptions(getenv func(string) string, maxTurns int) (assistant.WindowOptions, string, error) {
	o := assistant.WindowOptions{
		MaxTurns: c.Window.MaxTurns, LowTurns: c.Window.LowTurns,
		MaxTokens: c.Window.MaxTokens, LowTokens: c.Window.LowTokens,
		MinTurns: c.Window.MinTurns,
	}
	for _, v := range []struct {
		env string
		to  *int
	}{
		{"MOMBOT_WINDOW_MAX_TURNS", &o.MaxTurns},
		{"MOMBOT_WINDOW_LOW_TURNS", &o.LowTurns},
		{"MOMBOT_WINDOW_MAX_TOKENS", &o.MaxTokens},
		{"MOMBOT_WINDOW_LOW_TOKENS", &o.LowTokens},
		{"MOMBOT_WINDOW_MIN_TURNS", &o.MinTurns},
	} {
		s := strings.TrimSpace(getenv(v.env))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return o, "", fmt.Errorf("%s: want a whole number, 0 for the default, got %q", v.env, s)
		}
		*v.to = n
	}
	ttl := c.CacheTTL
	if s := strings.TrimSpace(getenv("MOMBOT_CACHE_TTL")); s != "" {
		ttl = s
	}
	if err := assistant.CheckCacheTTL(ttl); err != nil {
		return o, "", fmt.Errorf("config: %w", err)
	}
	if err := o.Validate(maxTurns); err != nil {
		return o, "", fmt.Errorf("config: %w", err)
	}
	return o, ttl, nil
}
