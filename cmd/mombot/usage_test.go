package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

// seedUsage adds to the ledger of the store at url.
func seedUsage(t *testing.T, url string, phone string, at time.Time, u conversation.Usage) {
	t.Helper()
	s, err := openStore(context.Background(), url, quietEnv())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, _ := conversation.New(s, nil)
	if err := mem.AddUsage(context.Background(), phone, at, u); err != nil {
		t.Fatal(err)
	}
}

const (
	erinPhone  = "+14155551234"
	jasonPhone = "+14155555678"
)

func TestUsageCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	config := filepath.Join(dir, "mombot.json")
	if err := os.WriteFile(config, []byte(`{"family": {"+1 (415) 555-1234": {"name": "Erin"}}, "prices": {"input": 3, "output": 15}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"MOMBOT_STORE": "file:" + path, "MOMBOT_CONFIG": config}
	seed(t, path, time.Now(), erinPhone, storetest.TextTurn("hi", "hello"))
	day1 := time.Date(2026, 2, 23, 12, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	seedUsage(t, path, erinPhone, day1, conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 2, InputTokens: 1000, CacheWrite5mTokens: 2000, CacheWrite1hTokens: 3000, CacheReadTokens: 4000, OutputTokens: 500}})
	seedUsage(t, path, erinPhone, day2, conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, InputTokens: 100, CacheReadTokens: 900, OutputTokens: 50}})
	seedUsage(t, path, jasonPhone, day2, conversation.Usage{Messages: 2, Tokens: conversation.Tokens{Calls: 2, InputTokens: 10, OutputTokens: 20}})

	// The ledger outlives the conversation.
	if _, errOut, code := runCmd(t, vars, "history", "clear", erinPhone); code != 0 {
		t.Fatalf("history clear: %s", errOut)
	}

	out, errOut, code := runCmd(t, vars, "usage")
	if code != 0 {
		t.Fatalf("usage: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"+*******1234", "Erin", "+*******5678", "TOTAL", "UTC", "the prices in mombot.json", "input 3,", "cache write 5m 3.75,", "cache read 0.3,",
		"44.5%", // Erin's read share: 4,900 read of 11,000 prompt tokens
	} {
		if !strings.Contains(out, want) {
			t.Errorf("usage output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "4155551234") {
		t.Errorf("a full number without --full:\n%s", out)
	}
	if out, _, _ := runCmd(t, vars, "usage", "--full"); !strings.Contains(out, erinPhone) {
		t.Errorf("--full does not show the number:\n%s", out)
	}

	// --json, with flags anywhere, and --since leaves out earlier days.
	out, errOut, code = runCmd(t, vars, "usage", "--json", "--since", "2026-02-24")
	if code != 0 {
		t.Fatalf("usage --json: exit %d: %s", code, errOut)
	}
	var r struct {
		Since   string `json:"since"`
		DayZone string `json:"day_zone"`
		People  []struct {
			Phone, Name string
			Messages    int64   `json:"messages"`
			Calls       int64   `json:"api_calls"`
			Input       int64   `json:"input_tokens"`
			Write1h     int64   `json:"cache_write_1h_tokens"`
			Read        int64   `json:"cache_read_tokens"`
			Share       float64 `json:"cache_read_share"`
			Cost        float64 `json:"estimated_cost_usd"`
			Days        []struct{ Day string }
		}
		Total struct {
			Messages int64   `json:"messages"`
			Output   int64   `json:"output_tokens"`
			Cost     float64 `json:"estimated_cost_usd"`
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	if r.Since != "2026-02-24" || r.DayZone != "UTC" || len(r.People) != 2 {
		t.Fatalf("--json: %+v", r)
	}
	erin := r.People[0]
	if erin.Phone != "+*******1234" || erin.Name != "Erin" || erin.Messages != 1 || erin.Calls != 1 || erin.Input != 100 || erin.Write1h != 0 || erin.Read != 900 || len(erin.Days) != 1 || erin.Days[0].Day != "2026-02-24" {
		t.Errorf("erin since 2026-02-24: %+v", erin)
	}
	if math.Abs(erin.Share-0.9) > 1e-9 {
		t.Errorf("erin's cache read share %v, want 0.9", erin.Share)
	}
	// $3 input, $0.30 read, $15 output per million.
	if want := (100*3 + 900*0.3 + 50*15) / 1e6; math.Abs(erin.Cost-want) > 1e-12 {
		t.Errorf("erin's cost %v, want %v", erin.Cost, want)
	}
	if r.Total.Messages != 3 || r.Total.Output != 70 {
		t.Errorf("total %+v", r.Total)
	}
	if want := (100*3+900*0.3+50*15)/1e6 + (10*3+20*15)/1e6; math.Abs(r.Total.Cost-want) > 1e-12 {
		t.Errorf("total cost %v, want %v", r.Total.Cost, want)
	}
}

func TestUsageCommandErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.json")
	badConfig := filepath.Join(dir, "bad.json")
	os.WriteFile(badConfig, []byte(`{"prices": {"input": -2}}`), 0o600)
	unknownKey := filepath.Join(dir, "unknown.json")
	os.WriteFile(unknownKey, []byte(`{"prices": {"inptu": 2}}`), 0o600)
	tests := []struct {
		name string
		vars map[string]string
		args []string
		code int
		want string
	}{
		{"a date that is not one", nil, []string{"usage", "--since", "24/02/2026"}, 2, "want a date like 2026-02-24"},
		{"a date that does not exist", nil, []string{"usage", "--since", "2026-02-30"}, 2, "want a date like 2026-02-24"},
		{"an argument", nil, []string{"usage", "today"}, 2, "takes no arguments"},
		{"a store that is not there", map[string]string{"MOMBOT_STORE": missing}, []string{"usage"}, 1, "no conversations file at " + missing},
		{"a negative price", map[string]string{"MOMBOT_CONFIG": badConfig}, []string{"usage"}, 1, "prices.input must be"},
		{"an unknown price", map[string]string{"MOMBOT_CONFIG": unknownKey}, []string{"usage"}, 1, `unknown key "inptu"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"MOMBOT_STORE": filepath.Join(dir, "conversations.json")}
			for k, v := range tt.vars {
				vars[k] = v
			}
			_, errOut, code := runCmd(t, vars, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want exit %d and one line with %q", code, errOut, tt.code, tt.want)
			}
		})
	}
	// Nothing was created by any of them.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n := e.Name(); n != "bad.json" && n != "unknown.json" {
			t.Errorf("usage created %s", n)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("the missing store was created: %v", err)
	}
}

// usage reads the ledger of every kind of store; an SQLite database is
// never created by it.
func TestUsageCommandSQLite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mombot.db")
	vars := map[string]string{"MOMBOT_STORE": "sqlite:" + path}
	if _, errOut, code := runCmd(t, vars, "usage"); code != 1 || !strings.Contains(errOut, path) {
		t.Fatalf("usage on a missing database: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("usage created the database: %v", err)
	}
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := conversation.New(s, nil)
	if err := mem.AddUsage(context.Background(), erinPhone, time.Now(), conversation.Usage{Messages: 1, Tokens: conversation.Tokens{Calls: 1, InputTokens: 5, OutputTokens: 5}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	out, errOut, code := runCmd(t, vars, "usage", "--json")
	if code != 0 || !strings.Contains(out, `"messages": 1`) {
		t.Fatalf("usage --json on sqlite: exit %d %s\n%s", code, errOut, out)
	}
}

// With another model configured and no prices, the estimate says that it
// uses the default model's prices.
func TestUsageCommandWarnsOfAnotherModel(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	config := filepath.Join(dir, "mombot.json")
	os.WriteFile(config, []byte(`{"model": "claude-opus-5"}`), 0o600)
	seed(t, path, time.Now(), erinPhone, storetest.TextTurn("hi", "hello"))
	out, errOut, code := runCmd(t, map[string]string{"MOMBOT_STORE": path, "MOMBOT_CONFIG": config}, "usage")
	if code != 0 || !strings.Contains(errOut, "the model is claude-opus-5 but the prices are claude-sonnet-5-5's") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "no usage recorded") {
		t.Errorf("stdout %q", out)
	}
}

// TestUsageCommandUnknownSummaryModel: with a memory.summary_model whose
// prices mombot does not know, usage prices the summarizer's calls at the
// main model's prices, says so on stderr, and names no summary prices.
func TestUsageCommandUnknownSummaryModel(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	config := filepath.Join(dir, "mombot.json")
	if err := os.WriteFile(config, []byte(`{"prices": {"input": 3, "output": 15}, "memory": {"summary_model": "claude-cheap-9"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	seed(t, path, time.Now(), erinPhone, storetest.TextTurn("hi", "hello"))
	// 1,000,000 input tokens, 400,000 of them the summarizer's: $3 at
	// the main model's $3 a million, whoever made them.
	seedUsage(t, path, erinPhone, time.Now(), conversation.Usage{Messages: 1,
		Tokens: conversation.Tokens{Calls: 2, InputTokens: 1_000_000}, Summarizer: conversation.Tokens{Calls: 1, InputTokens: 400_000}})
	out, errOut, code := runCmd(t, map[string]string{"MOMBOT_STORE": "file:" + path, "MOMBOT_CONFIG": config}, "usage", "--json")
	if code != 0 || !strings.Contains(errOut, "the prices of memory.summary_model claude-cheap-9 are unknown") {
		t.Fatalf("exit %d, stderr %q; want a warning that claude-cheap-9's prices are unknown", code, errOut)
	}
	var rep struct {
		Total struct {
			Cost float64 `json:"estimated_cost_usd"`
		} `json:"total"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("usage --json: %v\n%s", err, out)
	}
	if math.Abs(rep.Total.Cost-3) > 1e-9 || strings.Contains(out, "summary_prices") {
		t.Errorf("usage --json = %s; want $3 in all and no summary prices", out)
	}
}
