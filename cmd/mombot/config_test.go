package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mombot.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "prompt.txt"), []byte("You are the Smith family's assistant."), 0o600)
	path := filepath.Join(dir, "mombot.json")
	os.WriteFile(path, []byte(`{
  "timezone": "America/Los_Angeles",
  "family": {
    "+14155551234": {"name": "Erin"},
    "+1 (415) 555-5678": {"name": "Jason", "timezone": "Europe/Paris"}
  },
  "system_prompt_file": "prompt.txt",
  "request_timeout": "45s",
  "fallback_model": "claude-haiku-4-5",
  "whatsapp": {"phone_number_id": "123", "max_age": "12h"}
}`), 0o600)
	c, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if loc, _ := c.location(c.Family["+14155551234"].Timezone); loc.String() != "America/Los_Angeles" {
		t.Errorf("Erin's zone = %v, want the family's", loc)
	}
	if loc, _ := c.location(c.Family["+14155555678"].Timezone); loc.String() != "Europe/Paris" {
		t.Errorf("Jason's zone = %v", loc)
	}
	if d, err := c.requestTimeout(); err != nil || d != 45*time.Second || c.FallbackModel != "claude-haiku-4-5" {
		t.Errorf("request timeout %v (%v), fallback %q", d, err, c.FallbackModel)
	}
	if p, err := c.systemPrompt(); err != nil || !strings.Contains(p, "Smith") {
		t.Errorf("system prompt = %q, %v", p, err)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := map[string]string{
		`{"family": {"+14155551234": {}}}`:                                              "has no name",
		`{"family": {"": {"name": "x"}}}`:                                               "international form",
		`{"family": {"ext 12": {"name": "x"}}}`:                                         "international form",
		`{"family": {"(415) 555-1234": {"name": "x"}}}`:                                 "no country code",
		`{"family": {"14155551234": {"name": "x"}}}`:                                    "no country code",
		`{"family": {"+1 555 123": {"name": "x"}}}`:                                     "fewer than 8 digits",
		`{"family": {"+14155551234": {"name": "a"}, "+1 415 555 1234": {"name": "b"}}}`: "listed twice",
		`{"timezone": "Mars/Olympus"}`:                                                  "timezone",
		`{"famly": {}}`:                                                                 `unknown field "famly"`,
		`{"whatsapp": {"max_age": "a day"}}`:                                            "max_age",
		`{"whatsapp": {"max_age": "0"}}`:                                                `whatsapp.max_age must be a positive duration such as "24h", got "0"`,
		`{"whatsapp": {"max_age": "0s"}}`:                                               "must be a positive duration",
		`{"whatsapp": {"max_age": "-1h"}}`:                                              `got "-1h"`,
		`{"family": {"+14155551234": {"name": "x", "timezone": 3}}}`:                    "cannot unmarshal",
		`{"request_timeout": "soon"}`:                                                   "request_timeout",
		`{"request_timeout": "0s"}`:                                                     `request_timeout must be a positive duration such as "30s", got "0s"`,
		`{"request_timeout": "-2s"}`:                                                    "must be a positive duration",
		`{"request_timeout": 2}`:                                                        "cannot unmarshal",
		`{"fallback": "claude-haiku-4-5"}`:                                              `unknown field "fallback"`,
	}
	for body, want := range tests {
		_, err := loadConfig(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", body, err, want)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error is not one line: %q", body, err)
		}
	}
	if _, err := loadConfig(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a named configuration file that is missing was accepted")
	}
}
