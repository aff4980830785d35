package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad: whatever the file holds, Load does not panic, and a mistake is
// one line that starts with the file's position.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"family": {"+14155551234": {"name": "Erin"}}}`, "{\n  \"max_tokens\": \"lots\"\n}",
		`{"window": {"max_turns": true}}`, `{"prices": {"input": -1}}`, `{"model": "é", "x": 1}`, `{} {}`, `{`, `[`, "\xff",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		path := filepath.Join(dir, "mombot.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil {
			return
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "config "+path) {
			t.Errorf("%q: error %q is not one line naming the file", body, msg)
		}
	})
}
