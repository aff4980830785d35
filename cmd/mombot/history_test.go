package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

// runCmd runs mombot in-process with args and the variables in vars, and
// returns its output and exit status.
func runCmd(t *testing.T, vars map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return vars[k] }
	err := run(context.Background(), append([]string{"mombot"}, args...), getenv, strings.NewReader(""), &out, &errb)
	code = exitCode(err, &errb)
	return out.String(), errb.String(), code
}

// seed saves turns into the JSON store at path at the given time.
func seed(t *testing.T, path string, at time.Time, phone string, turns ...[]conversation.Message) {
	t.Helper()
	s, err := jsonfile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, _ := conversation.New(s, &conversation.Options{Now: func() time.Time { return at }})
	for _, turn := range turns {
		if err := mem.SaveTurn(context.Background(), phone, turn); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHistoryCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	vars := map[string]string{"MOMBOT_STORE": "file:" + path}
	now := time.Now()
	seed(t, path, now, "+14155551234",
		storetest.ToolTurn("[From Erin]: find me a chicken dinner", "toolu_01", "Found 5 recipes: 1. Lemon chicken", "1. Lemon chicken"),
		storetest.TextTurn("[From Erin]: tell me more about number 1", "It takes 30 minutes."))
	seed(t, path, now.Add(-time.Hour), "+14155555678", storetest.TextTurn("[From Jason]: hi", "hello"))

	out, errOut, code := runCmd(t, vars, "history", "list")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"+*******1234", "+*******5678", "active", "expired"} {
		if !strings.Contains(out, want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "4155551234") {
		t.Errorf("list shows a full phone number without --full:\n%s", out)
	}
	if out, _, _ := runCmd(t, vars, "history", "list", "--full"); !strings.Contains(out, "+14155551234") {
		t.Errorf("list --full does not show the number:\n%s", out)
	}

	out, errOut, code = runCmd(t, vars, "history", "show", "+14155551234")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"user: [From Erin]: find me a chicken dinner",
		`-> tool search {"query":"[From Erin]: find me a chicken dinner"}`,
		"<- result: Found 5 recipes: 1. Lemon chicken",
		"assistant: It takes 30 minutes.",
		"--- turn 2 ---",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show output lacks %q:\n%s", want, out)
		}
	}

	out, _, code = runCmd(t, vars, "history", "show", "--json", "+14155551234")
	store, _ := jsonfile.Open(path, nil)
	mem, _ := conversation.New(store, nil)
	want, _ := mem.History(context.Background(), "+14155551234")
	store.Close()
	if code != 0 || len(want) != 6 {
		t.Fatalf("show --json: exit %d; History has %d messages, want 6", code, len(want))
	}
	// Exactly the bytes History's messages are sent as: compact, stored
	// bytes, no HTML escapes.
	var b strings.Builder
	for i, m := range want {
		mb, _ := m.MarshalJSON()
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mb)
	}
	if wantOut := "[" + b.String() + "]\n"; out != wantOut {
		t.Fatalf("show --json:\ngot  %s\nwant %s", out, wantOut)
	}

	// An expired conversation is shown as such and not deleted by looking.
	out, _, _ = runCmd(t, vars, "history", "show", "+14155555678")
	if !strings.Contains(out, "expired") {
		t.Errorf("show of an expired conversation does not say so:\n%s", out)
	}
	if out, _, _ := runCmd(t, vars, "history", "show", "--json", "+14155555678"); strings.TrimSpace(out) != "[]" {
		t.Errorf("show --json of an expired conversation = %s, want [] as History gives", out)
	}
	if out, _, _ := runCmd(t, vars, "history", "list", "--full"); !strings.Contains(out, "+14155555678") {
		t.Error("showing an expired conversation deleted it")
	}

	out, errOut, code = runCmd(t, vars, "history", "clear", "+14155551234")
	if code != 0 || !strings.Contains(out, "cleared") {
		t.Fatalf("clear: exit %d: %s %s", code, out, errOut)
	}
	if _, errOut, code := runCmd(t, vars, "history", "show", "+14155551234"); code != 1 || !strings.Contains(errOut, "no conversation stored for +14155551234") {
		t.Fatalf("show after clear: exit %d, %q", code, errOut)
	}
}

func TestHistoryBadInput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	seed(t, path, time.Now(), "+1", storetest.TextTurn("a", "b"))
	before, _ := os.ReadFile(path)
	vars := map[string]string{"MOMBOT_STORE": path}
	tests := []struct {
		name string
		vars map[string]string
		args []string
		code int
		want string
	}{
		{"no command", vars, nil, 2, "no command given"},
		{"unknown command", vars, []string{"frobnicate"}, 2, `unknown command "frobnicate"; run "mombot help"`},
		{"mistyped command", vars, []string{"sevre"}, 2, `unknown command "sevre" (did you mean "serve"?)`},
		{"help for a mistyped command", vars, []string{"help", "histroy"}, 2, `unknown command "histroy" (did you mean "history"?)`},
		{"mistyped sub-command", vars, []string{"history", "lsit"}, 2, `unknown sub-command "lsit" (did you mean "list"?)`},
		{"ask without a message", vars, []string{"ask", "--from", "+14155551234"}, 2, "ask: give the message to send"},
		{"ask with a blank message", vars, []string{"ask", "--from", "+14155551234", " "}, 2, "ask: give the message to send"},
		{"ask with --from after the message", vars, []string{"ask", "hi", "--from"}, 2, "flag needs an argument: -from"},
		{"file: without a path", vars, []string{"history", "list", "--store", "file:"}, 2, "file: needs a path"},
		{"no sub-command", vars, []string{"history"}, 2, "which sub-command"},
		{"unknown sub-command", vars, []string{"history", "erase"}, 2, `unknown sub-command "erase"`},
		{"bad flag", vars, []string{"history", "list", "--nope"}, 2, "mombot: history: flag provided but not defined: -nope (see mombot history -h)"},
		{"bad flag after the phone", vars, []string{"history", "show", "+1", "--nope"}, 2, "history: flag provided but not defined: -nope"},
		{"bad flag value", vars, []string{"history", "list", "--timeout", "soon"}, 2, `history: invalid value "soon" for flag -timeout`},
		{"ask bad flag", vars, []string{"ask", "--nope", "hi"}, 2, "mombot: ask: flag provided but not defined: -nope (see mombot ask -h)"},
		{"chat bad flag", vars, []string{"chat", "--nope"}, 2, "mombot: chat: flag provided but not defined: -nope (see mombot chat -h)"},
		{"serve bad flag", vars, []string{"serve", "--nope"}, 2, "mombot: serve: flag provided but not defined: -nope (see mombot serve -h)"},
		{"migrate bad flag", vars, []string{"history", "migrate", "--nope"}, 2, "mombot: history migrate: flag provided but not defined: -nope (see mombot history migrate -h)"},
		{"missing phone", vars, []string{"history", "show"}, 2, "exactly one phone number"},
		{"two phones", vars, []string{"history", "show", "+1", "+2"}, 2, `history show takes one phone number; "+2" is extra`},
		{"extra argument", vars, []string{"history", "list", "x"}, 2, "takes no arguments"},
		{"unknown phone", vars, []string{"history", "clear", "+19999999999"}, 1, "no conversation stored for +19999999999"},
		{"bad phone", vars, []string{"history", "show", " +1"}, 2, "invalid phone"},
		{"bad timeout env", map[string]string{"MOMBOT_STORE": path, "MOMBOT_CONVERSATION_TIMEOUT": "soon"}, []string{"history", "list"}, 2, "MOMBOT_CONVERSATION_TIMEOUT"},
		{"bad max turns", vars, []string{"history", "list", "--max-turns", "0"}, 2, "max-turns"},
		{"unknown store kind", map[string]string{"MOMBOT_STORE": "mongo://x"}, []string{"history", "list"}, 2, `unknown kind "mongo"`},
		{"a folder as the store", map[string]string{"MOMBOT_STORE": dir}, []string{"history", "list"}, 2, "is a folder; name a file in it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCmd(t, tt.vars, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errOut, tt.code, tt.want)
			}
			if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines > 0 {
				t.Errorf("the error takes %d lines, want one:\n%s", lines+1, errOut)
			}
		})
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("bad input changed the store")
	}
}

// TestHistorySQLiteStore: history lists an empty database, and reports a
// mistyped one instead of creating it.
func TestHistorySQLiteStore(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo.db")
	vars := map[string]string{"MOMBOT_STORE": "sqlite:" + missing}
	if out, errOut, code := runCmd(t, vars, "history", "list"); code != 1 || !strings.Contains(errOut, "no conversations file at "+missing) {
		t.Errorf("list on a missing sqlite store: exit %d %q %q, want 1 and the path", code, out, errOut)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("list created the missing database: %v", err)
	}

	path := filepath.Join(t.TempDir(), "mombot.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	vars["MOMBOT_STORE"] = "sqlite:" + path
	if out, errOut, code := runCmd(t, vars, "history", "list"); code != 0 || !strings.Contains(out, "no conversations") {
		t.Fatalf("list on an empty sqlite store: exit %d %s %s", code, out, errOut)
	}
}

func TestHelp(t *testing.T) {
	out, _, code := runCmd(t, nil, "help")
	if code != 0 || !strings.Contains(out, "history") {
		t.Fatalf("help: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"history", "-h"}, {"history", "show", "-h"}, {"history", "show", "+1", "--help"}} {
		_, errOut, code := runCmd(t, nil, args...)
		if code != 0 || !strings.Contains(errOut, "mombot history show") || !strings.Contains(errOut, "-store") {
			t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
	}
	for _, cmd := range []string{"ask", "chat", "serve"} {
		_, errOut, code := runCmd(t, nil, cmd, "-h")
		if code != 0 || !strings.Contains(errOut, "-from") && !strings.Contains(errOut, "-listen") {
			t.Fatalf("%s -h: exit %d\n%s", cmd, code, errOut)
		}
	}
}

// TestHistoryFlagsAnywhere: flags of the history commands may come before
// the sub-command, after it, or after the phone.
func TestHistoryFlagsAnywhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	seed(t, path, time.Now(), "+14155551234", storetest.TextTurn("hi", "hello"))
	vars := map[string]string{"MOMBOT_STORE": filepath.Join(t.TempDir(), "other.json")}
	for _, args := range [][]string{
		{"history", "--json", "--store", path, "show", "+14155551234"},
		{"history", "show", "--json", "--store", path, "+14155551234"},
		{"history", "show", "+14155551234", "--json", "--store", path},
		{"history", "show", "+14155551234", "--store=" + path, "--json"},
	} {
		out, errOut, code := runCmd(t, vars, args...)
		if code != 0 || out != `[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"hello"}]}]`+"\n" {
			t.Errorf("%s: exit %d, %s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	// After --, everything is an argument.
	_, errOut, code := runCmd(t, vars, "history", "--store", path, "show", "--", "+14155551234", "--json")
	if code != 2 || !strings.Contains(errOut, `"--json" is extra`) {
		t.Errorf("show -- PHONE --json: exit %d, %s", code, errOut)
	}
}

// TestHistoryCreatesNothing: the history commands only read or remove, so a
// mistyped --store is an error and creates no folder, file or lock file.
func TestHistoryCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo", "x.json")
	for _, args := range [][]string{
		{"history", "list", "--store", typo},
		{"history", "show", "+14155551234", "--store", "file:" + typo},
		{"history", "clear", "+14155551234", "--store", typo},
	} {
		_, errOut, code := runCmd(t, nil, args...)
		if code != 1 || !strings.Contains(errOut, "no conversations file at "+typo) {
			t.Errorf("%s: exit %d, %q; want exit 1 naming the missing file", strings.Join(args, " "), code, errOut)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%s created %v", strings.Join(args, " "), entries)
		}
	}

	// Clearing an unknown phone writes nothing.
	path := filepath.Join(dir, "conversations.json")
	seed(t, path, time.Now(), "+1", storetest.TextTurn("a", "b"))
	before, _ := os.Stat(path)
	if _, errOut, code := runCmd(t, map[string]string{"MOMBOT_STORE": path}, "history", "clear", "+19999999999"); code != 1 {
		t.Fatalf("clear of an unknown phone: exit %d, %s", code, errOut)
	}
	if after, _ := os.Stat(path); !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("clear of an unknown phone rewrote the file")
	}
}

// TestHistoryFreshClone: with no store configured and no data folder yet,
// list says nothing is stored and exits 0, show and clear fail with the same
// words, and none of them creates the data folder.
func TestHistoryFreshClone(t *testing.T) {
	if fi, err := os.Stat(jsonfile.DockerDataDir); err == nil && fi.IsDir() {
		t.Skipf("%s exists here, so the default store is there", jsonfile.DockerDataDir)
	}
	t.Chdir(t.TempDir())
	out, errOut, code := runCmd(t, nil, "history", "list")
	if code != 0 || !strings.Contains(out, "no conversations stored yet") || !strings.Contains(out, filepath.Join("data", "conversations.json")) {
		t.Fatalf("list on a fresh clone: exit %d, %q %q", code, out, errOut)
	}
	_, errOut, code = runCmd(t, nil, "history", "show", "+14155551234")
	if code != 1 || !strings.Contains(errOut, "no conversations stored yet") {
		t.Fatalf("show on a fresh clone: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat("data"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the history commands created the data folder: %v", err)
	}
}

// TestHistoryReadOnly: list and show only look. On a good file they create
// no lock file; on a truncated or 0-byte file they report the damage and
// exit non-zero, and leave the file where it is.
func TestHistoryReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	seed(t, path, time.Now(), "+14155551234", storetest.TextTurn("a", "b"))
	os.Remove(path + ".lock") // seed's store made one
	for _, args := range [][]string{{"history", "list"}, {"history", "show", "+14155551234"}} {
		if _, errOut, code := runCmd(t, map[string]string{"MOMBOT_STORE": path}, args...); code != 0 {
			t.Fatalf("%s: exit %d, %s", strings.Join(args, " "), code, errOut)
		}
		if _, err := os.Stat(path + ".lock"); err == nil {
			t.Fatalf("%s created a lock file", strings.Join(args, " "))
		}
	}
	good, _ := os.ReadFile(path)
	for name, content := range map[string][]byte{"truncated": good[:len(good)/2], "0-byte": nil} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"history", "list"}, {"history", "show", "+14155551234"}} {
			out, errOut, code := runCmd(t, map[string]string{"MOMBOT_STORE": path}, args...)
			if code != 1 || !strings.Contains(errOut, "does not parse") || strings.Contains(out, "no conversations") {
				t.Errorf("%s on a %s file: exit %d, %q %q; want exit 1 reporting the damage", strings.Join(args, " "), name, code, out, errOut)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("%s on a %s file changed the folder: %v", strings.Join(args, " "), name, entries)
			}
		}
	}
}

// TestHelpCommand: mombot help CMD prints that command's usage and flags on
// stdout and exits 0, as mombot CMD -h does; for a sub-command too.
func TestHelpCommand(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "Commands:"},
		{[]string{"help", "help"}, "Commands:"},
		{[]string{"help", "serve"}, "mombot serve"},
		{[]string{"help", "ask"}, "Usage: mombot ask --from NAME|PHONE"},
		{[]string{"help", "history"}, "mombot history list"},
		{[]string{"help", "history", "migrate"}, "--from"},
	} {
		out, errOut, code := runCmd(t, nil, tt.args...)
		if code != 0 || !strings.Contains(out, tt.want) || !strings.Contains(out, "-") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 0 and %q", strings.Join(tt.args, " "), code, out, errOut, tt.want)
		}
	}
}

// TestHistoryWords: show says "1 turn" and "2 turns", and last-active
// times carry their zone.
func TestHistoryWords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	vars := map[string]string{"MOMBOT_STORE": path}
	now := time.Now()
	seed(t, path, now, "+14155551234", storetest.TextTurn("a", "b"))
	seed(t, path, now, "+14155555678", storetest.TextTurn("a", "b"), storetest.TextTurn("c", "d"))
	zone := now.Local().Format("MST")
	for phone, want := range map[string]string{"+14155551234": ": 1 turn, last active", "+14155555678": ": 2 turns, last active"} {
		out, errOut, code := runCmd(t, vars, "history", "show", phone)
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, " "+zone+" (active") {
			t.Errorf("show %s: exit %d, %q %q; want %q and the zone %s", phone, code, out, errOut, want, zone)
		}
	}
	out, _, _ := runCmd(t, vars, "history", "list")
	if !strings.Contains(out, " "+zone+" ") {
		t.Errorf("list has no zone %s:\n%s", zone, out)
	}
}
