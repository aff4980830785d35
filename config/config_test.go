package config

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
  "whatsapp": {"phone_number_id": "123", "max_age": "12h"},
  "retention": {"usage": "90d"}
}`), 0o600)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if loc, _ := c.Location(c.Family["+14155551234"].Timezone); loc.String() != "America/Los_Angeles" {
		t.Errorf("Erin's zone = %v, want the family's", loc)
	}
	if loc, _ := c.Location(c.Family["+14155555678"].Timezone); loc.String() != "Europe/Paris" {
		t.Errorf("Jason's zone = %v", loc)
	}
	if d, err := c.requestTimeout(); err != nil || d != 45*time.Second || c.FallbackModel != "claude-haiku-4-5" {
		t.Errorf("request timeout %v (%v), fallback %q", d, err, c.FallbackModel)
	}
	if p, err := c.SystemPrompt(); err != nil || !strings.Contains(p, "Smith") {
		t.Errorf("system prompt = %q, %v", p, err)
	}
	if d, err := c.UsageRetention(); err != nil || d != 90*24*time.Hour {
		t.Errorf("usage retention = %v, %v; want 90 days", d, err)
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
		`{"famly": {}}`:                                                                 `.json:1:2: unknown key "famly"`,
		`{"whatsapp": {"max_age": "a day"}}`:                                            "max_age",
		`{"whatsapp": {"max_age": "0"}}`:                                                `whatsapp.max_age must be a positive duration such as "24h", got "0"`,
		`{"whatsapp": {"max_age": "0s"}}`:                                               "must be a positive duration",
		`{"whatsapp": {"max_age": "-1h"}}`:                                              `got "-1h"`,
		`{"family": {"+14155551234": {"name": "x", "timezone": 3}}}`:                    ":1:55: family.timezone: want a string, got a number",
		`{"retention": {"usage": "a year"}}`:                                            "retention.usage: want a whole number of days",
		`{"retention": {"usage": "0d"}}`:                                                "retention.usage",
		`{"request_timeout": "soon"}`:                                                   "request_timeout",
		`{"request_timeout": "0s"}`:                                                     `request_timeout must be a positive duration such as "30s", got "0s"`,
		`{"request_timeout": "-2s"}`:                                                    "must be a positive duration",
		`{"request_timeout": 2}`:                                                        ":1:21: request_timeout: want a string, got a number",
		`{"fallback": "claude-haiku-4-5"}`:                                              `unknown key "fallback"`,
	}
	for body, want := range tests {
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", body, err, want)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error is not one line: %q", body, err)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a named configuration file that is missing was accepted")
	}
}

// TestFamilyErrorsShowTheNumberTyped: a mistake about the family names the
// line and column of the number and shows it as typed, since the file is
// the reader's own (a masked "******1234" would hide the mistake), and the
// checks after the decoding give their line and column too.
func TestFamilyErrorsShowTheNumberTyped(t *testing.T) {
	tests := []struct{ body, want string }{
		{"{\n  \"family\": {\n    \"(415) 555-1234\": {\"name\": \"Erin\"}\n  }\n}",
			`:3:5: family: "(415) 555-1234": no country code; write numbers in international form, like +14155551234`},
		{"{\"family\": {\"+14155551234\": {\"name\": \"Erin\"},\n \"4155555678\": {\"name\": \"Jason\"}}}",
			`:2:2: family: "4155555678": no country code`},
		{`{"family": {"+1 555 123": {"name": "x"}}}`, `:1:13: family: "+1 555 123": not a phone number: fewer than 8 digits; write numbers in international form`},
		{"{\"family\": {\"+14155551234\": {\"name\": \"a\"},\n  \"+1 415 555 1234\": {\"name\": \"b\"}}}",
			`:2:3: family: "+14155551234" and "+1 415 555 1234" are the same number, listed twice`},
		{`{"family": {"+14155551234": {}}}`, `:1:13: family: "+14155551234" has no name`},
		{`{"family": {"+14155551234": {"name": "Erin", "timezone": "Mars/Olympus"}}}`, `:1:58: family member Erin: timezone: unknown time zone Mars/Olympus`},
		{"{\n  \"timezone\": \"Mars/Olympus\"\n}", `:2:15: timezone: unknown time zone Mars/Olympus`},
		{`{"request_timeout": "0s"}`, `:1:21: request_timeout must be a positive duration`},
		{`{"whatsapp": {"max_age": "a day"}}`, `:1:26: whatsapp.max_age: time: invalid duration`},
	}
	for _, tt := range tests {
		path := writeConfig(t, tt.body)
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), "config "+path+tt.want) {
			t.Errorf("%s:\nerr  = %v\nwant %q", tt.body, err, "config "+path+tt.want)
		}
	}
}

// TestConfigErrorWords: a configuration error names the file, line and
// column and the key as the file writes it, and the kinds of value in
// JSON's words; never a Go type or field name.
func TestConfigErrorWords(t *testing.T) {
	tests := []struct{ body, want string }{
		{"{\n  \"model\": \"claude\",\n  \"family\": {},\n  \"max_tokens\": \"lots\"\n}", ":4:17: max_tokens: want a whole number, got a string"},
		{"{\n  \"max_tokens\": 1.5\n}", ":2:17: max_tokens: want a whole number, got 1.5"},
		{"{\"window\": {\"max_turns\": true}}", ":1:26: window.max_turns: want a whole number, got true or false"},
		{"{\"family\": []}", ":1:12: family: want an object, got a list"},
		{"{\n  \"model\": \"x\",\n}", ":3:1: invalid character '}' looking for beginning of object key string"},
		{"{\n  \"model\": \"x\"", ":2:15: the file ends before the configuration does"},
		{"{\n  \"modle\": \"x\"\n}", ":2:3: unknown key \"modle\""},
		{"{\"model\": \"é\", \"x\": 1}", ":1:16: unknown key \"x\""},
		{"{} {}", ":1:4: more after the configuration's closing }"},
	}
	for _, tt := range tests {
		path := writeConfig(t, tt.body)
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), path+tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.body, err, path+tt.want)
			continue
		}
		for _, goWord := range []string{"Go ", "File.", "int", "unmarshal", "json:"} {
			if strings.Contains(strings.ReplaceAll(err.Error(), path, ""), goWord) {
				t.Errorf("%q: err = %v says %q", tt.body, err, goWord)
			}
		}
	}
}

// TestNotesConfig: notes are on by default, keyed by the default family id
// and claimed by the family's numbers; family_id names the key and
// memory.notes false turns them off; a family_id that cannot be a key is
// refused at start.
func TestNotesConfig(t *testing.T) {
	c, err := Load(writeConfig(t, `{"family": {"+14155551234": {"name": "Erin"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	fam, on := c.NotesFamily()
	if !on || fam.ID != "family" || !fam.Claim || fam.Members["+14155551234"] != "Erin" {
		t.Errorf("default notes = %+v, on %v; want on, id family, claimed by Erin", fam, on)
	}
	opts, err := c.AssistantOptions(func(string) string { return "" }, 10, false)
	if err != nil || opts.Notes == nil || opts.Notes.Members["+14155551234"] != "Erin" {
		t.Errorf("assistant options' notes = %+v, %v", opts.Notes, err)
	}
	c, err = Load(writeConfig(t, `{"family_id": "smiths", "memory": {"notes": false}, "family": {"+14155551234": {"name": "Erin"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if fam, on := c.NotesFamily(); on || fam.ID != "smiths" || fam.Claim {
		t.Errorf("notes = %+v, on %v; want off, id smiths, not claimed", fam, on)
	}
	if opts, _ := c.AssistantOptions(func(string) string { return "" }, 10, false); opts.Notes != nil {
		t.Errorf("memory.notes false still gives the assistant notes: %+v", opts.Notes)
	}
	for _, bad := range []string{`" smiths"`, `"a\u0001b"`, `"` + strings.Repeat("x", 65) + `"`} {
		if _, err := Load(writeConfig(t, `{"family_id": `+bad+`}`)); err == nil || !strings.Contains(err.Error(), "family_id") {
			t.Errorf("family_id %s: err = %v, want one naming family_id", bad, err)
		}
	}
}
