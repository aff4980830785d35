package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/config"
)

// TestSummaries: memory.summaries is on by default for a family, off with
// false or without a family; the model, length and keep are read and
// checked.
func TestSummaries(t *testing.T) {
	const fam = `"family": {"+14155551234": {"name": "Erin"}}`
	tests := []struct {
		name, file string
		on         bool
		model      string
		maxTok     int
		keep       time.Duration
		err        string
	}{
		{"default", `{` + fam + `}`, true, "", 0, 0, ""},
		{"off", `{` + fam + `, "memory": {"summaries": false}}`, false, "", 0, 0, ""},
		{"no family", `{}`, false, "", 0, 0, ""},
		{"set", `{` + fam + `, "memory": {"summary_model": "claude-haiku-4-5", "summary_max_tokens": 300, "summary_keep": "14d"}}`, true, "claude-haiku-4-5", 300, 14 * 24 * time.Hour, ""},
		{"bad keep", `{` + fam + `, "memory": {"summary_keep": "soon"}}`, false, "", 0, 0, "memory.summary_keep"},
		{"bad max", `{` + fam + `, "memory": {"summary_max_tokens": -1}}`, false, "", 0, 0, "memory.summary_max_tokens"},
		{"unknown key", `{` + fam + `, "memory": {"summary": true}}`, false, "", 0, 0, "summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mombot.json")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := config.Load(path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Load = %v, want an error naming %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o, keep, err := c.Summaries()
			if err != nil || (o != nil) != tt.on || keep != tt.keep {
				t.Fatalf("Summaries = %+v, %v, %v; want on %v, keep %v", o, keep, err, tt.on, tt.keep)
			}
			if o != nil && (o.Model != tt.model || o.MaxTokens != tt.maxTok) {
				t.Errorf("Summaries = %+v, want model %q, max %d", o, tt.model, tt.maxTok)
			}
			ao, err := c.AssistantOptions(func(string) string { return "" }, 10, false)
			if err != nil || (ao.Summaries != nil) != tt.on {
				t.Errorf("AssistantOptions.Summaries = %+v, %v", ao.Summaries, err)
			}
		})
	}
}
