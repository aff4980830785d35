package jsonfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storetest"
)

var ctx = context.Background()

// quiet is a logger for tests that do not look at the log.
var quiet = slog.New(slog.DiscardHandler)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "data", "conversations.json")
		return func() (conversation.Store, error) { return jsonfile.Open(path, &jsonfile.Options{Logger: quiet}) }
	})
}

// logBuffer returns a logger writing text lines to the returned buffer.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

// open opens the store at path with a memory whose clock reads at.
func open(t *testing.T, path string, at time.Time, opts *jsonfile.Options) (*jsonfile.Store, *conversation.Memory) {
	t.Helper()
	if opts == nil {
		opts = &jsonfile.Options{Logger: quiet}
	}
	s, err := jsonfile.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return at }, MaxTurns: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

func copyFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "conversations.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadsWhatPythonWrote(t *testing.T) {
	path := copyFixture(t, "python_written.json")
	at := time.Date(2026, 2, 24, 10, 40, 0, 0, time.Local)
	_, mem := open(t, path, at, nil)
	h, err := mem.History(ctx, "+14155551234")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 6 {
		t.Fatalf("got %d messages, want 6", len(h))
	}
	// Python's \u escapes are kept as written: the bytes do not change.
	if got, want := string(h[2].Content), `[{"type":"tool_result","tool_use_id":"toolu_01A","content":"Found 5 recipes: 1. Lemon chicken \u00e0 la <grecque>"}]`; got != want {
		t.Fatalf("tool result bytes:\ngot  %s\nwant %s", got, want)
	}
	if got := h[5].Text(); got != "That looks like Salt Fat Acid Heat." {
		t.Fatalf("last message text = %q", got)
	}
	// 09:15 is more than 30 minutes before 10:40: expired.
	if h, _ := mem.History(ctx, "+14155555678"); len(h) != 0 {
		t.Fatalf("expired conversation returned %d messages", len(h))
	}

	// Saving keeps the keys this package does not know.
	if err := mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("thanks", "you're welcome")); err != nil {
		t.Fatal(err)
	}
	var file map[string]struct {
		LastActive string            `json:"last_active"`
		Nickname   string            `json:"nickname"`
		Turns      []json.RawMessage `json:"turns"`
	}
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	erin := file["+14155551234"]
	if erin.Nickname != "Erin" || erin.LastActive != "2026-02-24T10:40:00" || len(erin.Turns) != 3 {
		t.Fatalf("after a save: nickname %q, last_active %q, %d turns", erin.Nickname, erin.LastActive, len(erin.Turns))
	}
	if !bytes.Contains(erin.Turns[1], []byte(`"note": "kept"`)) {
		t.Fatalf("the turn's extra key was dropped: %s", erin.Turns[1])
	}
	if !bytes.Contains(erin.Turns[0], []byte(`"sent_at": "2026-02-24T10:34:58"`)) {
		t.Fatalf("the message's extra key was dropped: %s", erin.Turns[0])
	}
	if _, ok := file["+14155555678"]; ok {
		t.Fatal("the conversation that expired on access is still in the file")
	}
}

// TestPythonReadsWhatWeWrote runs the original module's reading logic on a
// file this package wrote.
func TestPythonReadsWhatWeWrote(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("MOMBOT_CI") != "" {
			t.Fatal("python3 is not installed, and CI (MOMBOT_CI is set) must run this test")
		}
		t.Skip("python3 is not installed; the format is still checked by TestReadsWhatPythonWrote")
	}
	path := filepath.Join(t.TempDir(), "conversations.json")
	at := time.Date(2026, 2, 24, 10, 35, 0, 123456000, time.Local)
	_, mem := open(t, path, at, nil)
	if err := mem.SaveTurn(ctx, "+14155551234", storetest.ToolTurn("find <chicken> é", "toolu_1", "found", "here")); err != nil {
		t.Fatal(err)
	}
	script := `
import json, sys, datetime
data = json.load(open(sys.argv[1]))
conv = data["+14155551234"]
last = datetime.datetime.fromisoformat(conv["last_active"])
assert last.tzinfo is None, "last_active must be naive"
assert last == datetime.datetime(2026, 2, 24, 10, 35, 0, 123456), last
msgs = [m for t in conv["turns"] for m in t["messages"]]
assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant"]
assert msgs[0]["content"] == "find <chicken> é", msgs[0]["content"]
assert msgs[1]["content"][1]["type"] == "tool_use"
print("ok")
`
	out, err := exec.Command(py, "-c", script, path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("python could not read our file: %v\n%s", err, out)
	}
}

func TestLastActiveFormats(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2026-02-24T10:35:00.123456", time.Date(2026, 2, 24, 10, 35, 0, 123456000, time.Local)},
		{"2026-02-24T10:35:00", time.Date(2026, 2, 24, 10, 35, 0, 0, time.Local)},
		{"2026-02-24 10:35:00.5", time.Date(2026, 2, 24, 10, 35, 0, 500000000, time.Local)},
		{"2026-02-24T10:35:00Z", time.Date(2026, 2, 24, 10, 35, 0, 0, time.UTC)},
		{"2026-02-24T10:35:00.25+02:00", time.Date(2026, 2, 24, 8, 35, 0, 250000000, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			doc := fmt.Sprintf(`{"+1": {"last_active": %q, "turns": [{"messages": [{"role": "user", "content": "hi"}]}]}}`, tt.in)
			path := filepath.Join(t.TempDir(), "c.json")
			os.WriteFile(path, []byte(doc), 0o600)
			s, _ := open(t, path, time.Now(), nil)
			c, err := s.Load(ctx, "+1")
			if err != nil {
				t.Fatal(err)
			}
			if !c.LastActive.Equal(tt.want) {
				t.Fatalf("last active = %v, want %v", c.LastActive, tt.want)
			}
		})
	}
}

func TestCorruptFileIsMovedAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	junk := []byte(`{"+1": {"last_active": "2026-02-24T10:35:00", "turns": [`)
	os.WriteFile(path, junk, 0o600)
	log, buf := logBuffer()
	_, mem := open(t, path, time.Now(), &jsonfile.Options{Logger: log})
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "moved_to=") {
		t.Fatalf("no loud log line for a corrupt file:\n%s", buf)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("corrupt file not moved aside: %v", aside)
	}
	if got, _ := os.ReadFile(aside[0]); !bytes.Equal(got, junk) {
		t.Fatal("the moved-aside file is not the original")
	}
	if h, _ := mem.History(ctx, "+1"); len(h) != 0 {
		t.Fatal("a corrupt file's content was served")
	}
	if err := mem.SaveTurn(ctx, "+2", storetest.TextTurn("hi", "hello")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(aside[0]); !bytes.Equal(got, junk) {
		t.Fatal("a save overwrote the moved-aside file")
	}
}

// TestEmptyFileIsCorrupt checks that a 0-byte (or blank) file, which mombot
// never writes, is handled like any other file that does not parse: a store
// that may write moves it aside, and does not take it as an empty store.
func TestEmptyFileIsCorrupt(t *testing.T) {
	for _, content := range []string{"", "  \n"} {
		path := filepath.Join(t.TempDir(), "conversations.json")
		os.WriteFile(path, []byte(content), 0o600)
		s, _ := open(t, path, time.Now(), nil)
		if l, err := s.List(ctx); err != nil || len(l) != 0 {
			t.Fatalf("List = %v, %v", l, err)
		}
		if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
			t.Errorf("the file %q was not moved aside: %v", content, aside)
		}
	}
}

// TestReadOnly checks the rules of Options.ReadOnly: nothing is created
// (no lock file), nothing is moved or removed, a damaged or empty file is
// reported with ErrCorrupt, and changes are refused.
func TestReadOnly(t *testing.T) {
	ro := &jsonfile.Options{Logger: quiet, ReadOnly: true}
	t.Run("a valid file is read and no lock file is made", func(t *testing.T) {
		path := copyFixture(t, "python_written.json")
		dir := filepath.Dir(path)
		temp := filepath.Join(dir, ".conversations.json.tmp-5")
		os.WriteFile(temp, []byte("{"), 0o600)
		before := names(t, dir)
		s, err := jsonfile.Open(path, ro)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if l, err := s.List(ctx); err != nil || len(l) == 0 {
			t.Errorf("List = %v, %v; want the fixture's conversations", l, err)
		}
		if err := s.Delete(ctx, "+1"); !errors.Is(err, jsonfile.ErrReadOnly) {
			t.Errorf("Delete = %v, want ErrReadOnly", err)
		}
		if after := names(t, dir); after != before {
			t.Errorf("the folder changed: before %s, after %s", before, after)
		}
	})
	for name, content := range map[string]string{"truncated": `{"+1": {"last_active": "2026-`, "empty": ""} {
		t.Run("a "+name+" file is reported and left where it is", func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "conversations.json")
			os.WriteFile(path, []byte(content), 0o600)
			before := names(t, dir)
			_, err := jsonfile.Open(path, ro)
			if !errors.Is(err, jsonfile.ErrCorrupt) {
				t.Errorf("Open = %v, want ErrCorrupt", err)
			}
			if after := names(t, dir); after != before {
				t.Errorf("the folder changed: before %s, after %s", before, after)
			}
		})
	}
	t.Run("a missing file is not created", func(t *testing.T) {
		dir := t.TempDir()
		_, err := jsonfile.Open(filepath.Join(dir, "sub", "conversations.json"), ro)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open = %v, want fs.ErrNotExist", err)
		}
		if got := names(t, dir); got != "[]" {
			t.Errorf("the folder changed: %s", got)
		}
	})
}

// names lists a folder's entries.
func names(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return fmt.Sprint(out)
}

func TestInvalidTurnsAreRepairedOnLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	doc := `{
  "+1": {"last_active": "2026-02-24T10:35:00", "turns": [
    {"messages": [{"role": "user", "content": "valid"}, {"role": "assistant", "content": [{"type": "text", "text": "yes"}]}]},
    {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "orphan"}]}]},
    {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]}]},
    {"no messages": true},
    {"messages": [{"role": "user", "content": ""}]},
    {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "t", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": ""}]}]}]},
    {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_3", "name": "t", "input": "not an object"}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_3", "content": "r"}]}]},
    {"messages": [{"role": "user", "content": "also valid"}]}
  ]},
  "system": {"last_active": "2026-02-24T10:35:00", "turns": [{"messages": [{"role": "user", "content": "digest"}]}]},
  "_meta": [1, 2, 3]
}`
	os.WriteFile(path, []byte(doc), 0o600)
	log, buf := logBuffer()
	_, mem := open(t, path, time.Date(2026, 2, 24, 10, 40, 0, 0, time.Local), &jsonfile.Options{Logger: log})
	h, err := mem.History(ctx, "+1")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[0].Text() != "valid" || h[2].Text() != "also valid" {
		t.Fatalf("repaired history = %d messages %v", len(h), h)
	}
	if err := conversation.ValidateTurn(h); err != nil {
		t.Fatalf("repaired history is not valid: %v", err)
	}
	if !strings.Contains(buf.String(), "dropped_turns=6") {
		t.Fatalf("repair not logged with its count:\n%s", buf)
	}
	if h, _ := mem.History(ctx, "system"); len(h) != 0 {
		t.Fatal("the system sender's conversation was loaded")
	}
	// A member that is not a conversation is kept through a save.
	if err := mem.SaveTurn(ctx, "+2", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var file map[string]json.RawMessage
	json.Unmarshal(data, &file)
	if _, ok := file["_meta"]; !ok {
		t.Fatalf("the _meta member was dropped:\n%s", data)
	}
	if _, ok := file["system"]; ok {
		t.Fatal("the system sender's conversation was written back")
	}
}

func TestFileModeAndNoTempLeft(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	os.WriteFile(path, []byte("{}"), 0o644) // as the original left it
	_, mem := open(t, path, time.Now(), nil)
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode = %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestWriteErrorIsReturnedAndChangesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "conversations.json")
	s, mem := open(t, path, time.Now(), nil)
	first := storetest.TextTurn("first", "one")
	if err := mem.SaveTurn(ctx, "+1", first); err != nil {
		t.Fatal(err)
	}
	// The folder vanishes (an unmounted volume): the next save cannot write.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("second", "two"))
	if err == nil {
		t.Fatal("a save that could not be written returned nil")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want the file system's error wrapped", err)
	}
	// The store keeps what it had and does not claim the unsaved turn.
	if h, _ := mem.History(ctx, "+1"); len(h) != 2 {
		t.Fatalf("after a failed save History = %d messages, want the 2 saved before", len(h))
	}
	// The volume is back: the next save writes the kept turn too.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("third", "three")); err != nil {
		t.Fatal(err)
	}
	if c, err := jsonfileLoad(t, path, "+1"); err != nil || len(c.Turns) != 2 || c.Turns[0].Messages[0].Text() != "first" {
		t.Fatalf("after the folder came back the file holds %+v, %v; want the first and third turns", c.Turns, err)
	}
	s.Close()
	if _, err := s.List(ctx); !errors.Is(err, jsonfile.ErrClosed) {
		t.Fatalf("List after Close: %v, want ErrClosed", err)
	}
}

// jsonfileLoad reads phone's conversation from a store opened afresh on path.
func jsonfileLoad(t *testing.T, path, phone string) (conversation.Conversation, error) {
	t.Helper()
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return s.Load(ctx, phone)
}

func TestReadOnlyFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only folders; TestWriteErrorIsReturnedAndChangesNothing covers write errors")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	_, mem := open(t, path, time.Now(), nil)
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("a", "b")); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("save into a read-only folder: err = %v, want permission denied", err)
	}
	if h, _ := mem.History(ctx, "+1"); len(h) != 0 {
		t.Fatal("a failed save changed the memory")
	}
}

// TestTwoStoresOnOneFile shows what a CLI command and the server see of each
// other's changes: each store has its own lock descriptor, as two processes do.
func TestTwoStoresOnOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	now := time.Now()
	_, server := open(t, path, now, nil)
	_, cli := open(t, path, now, nil)
	if err := server.SaveTurn(ctx, "+1", storetest.TextTurn("hi", "hello")); err != nil {
		t.Fatal(err)
	}
	if h, _ := cli.History(ctx, "+1"); len(h) != 2 {
		t.Fatalf("the second store sees %d messages, want 2", len(h))
	}
	if err := cli.Clear(ctx, "+1"); err != nil {
		t.Fatal(err)
	}
	if h, _ := server.History(ctx, "+1"); len(h) != 0 {
		t.Fatal("the server still serves a conversation the CLI cleared")
	}
	if err := server.SaveTurn(ctx, "+2", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := cli.SaveTurn(ctx, "+3", storetest.TextTurn("c", "d")); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*conversation.Memory{server, cli} {
		if l, _ := m.List(ctx); len(l) != 2 {
			t.Fatalf("a store lists %d conversations, want 2: an update was lost", len(l))
		}
	}
}

func TestSizeWarning(t *testing.T) {
	log, buf := logBuffer()
	_, mem := open(t, filepath.Join(t.TempDir(), "c.json"), time.Now(), &jsonfile.Options{Logger: log, WarnSize: 700})
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "large") {
		t.Fatal("warned below the size")
	}
	for i := range 5 {
		if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn(fmt.Sprint("more text ", i), "b")); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(buf.String(), "conversations file is large"); n != 1 {
		t.Fatalf("warned %d times, want once:\n%s", n, buf)
	}
}

func TestSweep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	clock := storetest.NewClock(storetest.Start)
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, _ := conversation.New(s, &conversation.Options{Now: clock.Now})
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Minute)
	if err := mem.SaveTurn(ctx, "+2", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Minute)
	n, err := mem.Sweep(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 deleted", n, err)
	}
	l, _ := s.List(ctx)
	if len(l) != 1 || l[0].Phone != "+2" {
		t.Fatalf("after the sweep: %v", l)
	}
}

func TestDefaultPath(t *testing.T) {
	dir := t.TempDir()
	docker := filepath.Join(dir, "app", "data")
	if got, want := jsonfile.DefaultPathIn(docker), filepath.Join("data", "conversations.json"); got != want {
		t.Errorf("without the container's folder: %q, want %q", got, want)
	}
	if err := os.MkdirAll(filepath.Dir(docker), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(docker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := jsonfile.DefaultPathIn(docker), filepath.Join("data", "conversations.json"); got != want {
		t.Errorf("with a file where the container's folder would be: %q, want %q", got, want)
	}
	if err := os.Remove(docker); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(docker, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, want := jsonfile.DefaultPathIn(docker), filepath.Join(docker, "conversations.json"); got != want {
		t.Errorf("with the container's folder: %q, want %q", got, want)
	}
	if jsonfile.DockerDataDir != "/app/data" {
		t.Errorf("DockerDataDir = %q, want the original image's /app/data", jsonfile.DockerDataDir)
	}
}

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "mombot")
	defer os.RemoveAll(dir)
	store, err := jsonfile.Open(filepath.Join(dir, "conversations.json"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	mem, _ := conversation.New(store, nil)
	ctx := context.Background()
	mem.SaveTurn(ctx, "+14155551234", []conversation.Message{
		conversation.UserText("[From Erin]: what's for dinner?"),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Tacos!")),
	})
	history, _ := mem.History(ctx, "+14155551234")
	for _, m := range history {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// user: [From Erin]: what's for dinner?
	// assistant: Tacos!
}

// TestFileVanishingKeepsMemory: the file is moved away while the store runs
// (another process moving a corrupt file aside, an operator's mv). The
// conversations in memory are not dropped, and the next save writes them
// all back.
func TestFileVanishingKeepsMemory(t *testing.T) {
	for _, first := range []string{"read", "save", "read, another process saves"} {
		t.Run("then "+first, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "conversations.json")
			log, buf := logBuffer()
			_, mem := open(t, path, time.Now(), &jsonfile.Options{Logger: log})
			for _, p := range []string{"+1", "+2"} {
				if err := mem.SaveTurn(ctx, p, storetest.TextTurn("hi "+p, "hello")); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Rename(path, path+".moved"); err != nil {
				t.Fatal(err)
			}
			if first != "save" {
				if h, err := mem.History(ctx, "+1"); err != nil || len(h) != 2 {
					t.Fatalf("History after the file vanished = %d messages, %v; want the 2 in memory", len(h), err)
				}
			}
			if first == "read, another process saves" {
				// It starts without a file, so its file cannot hold +1 and
				// +2; the first store merges them in.
				_, other := open(t, path, time.Now(), nil)
				if err := other.SaveTurn(ctx, "+3", storetest.TextTurn("new", "one")); err != nil {
					t.Fatal(err)
				}
				if h, err := mem.History(ctx, "+2"); err != nil || len(h) != 2 {
					t.Fatalf("History after another process wrote a new file = %d messages, %v; want the 2 in memory", len(h), err)
				}
			}
			if err := mem.SaveTurn(ctx, "+3", storetest.TextTurn("new", "one")); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "vanished") {
				t.Errorf("no loud log line for the vanished file:\n%s", buf)
			}
			s2, _ := open(t, path, time.Now(), nil)
			l, err := s2.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, sum := range l {
				got = append(got, sum.Phone)
			}
			if strings.Join(got, " ") != "+1 +2 +3" {
				t.Fatalf("the file after the next save holds %v, want +1 +2 +3", got)
			}
		})
	}
}

// TestCorruptFileMovedAsideOnlyUnderLock: a reader finds the file corrupt,
// and before it moves it aside another process (holding the lock file)
// moves the corrupt file aside itself and renames a valid new file into
// place. The valid file must not be moved aside, and nothing is lost.
func TestCorruptFileMovedAsideOnlyUnderLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	_, mem := open(t, path, time.Now(), nil)
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("one", "1")); err != nil {
		t.Fatal(err)
	}
	junk := []byte(`{"+1": {"turns": [`)
	if err := os.WriteFile(path+".junk", junk, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".junk", path); err != nil {
		t.Fatal(err)
	}
	ran := false
	defer jsonfile.SetParseFailedHook(func() {
		if ran {
			return
		}
		ran = true
		// The other process: its Open moves the junk aside under the
		// lock, and its save renames a valid file into place.
		other, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
		if err != nil {
			t.Error(err)
			return
		}
		defer other.Close()
		om, _ := conversation.New(other, nil)
		if err := om.SaveTurn(ctx, "+2", storetest.TextTurn("two", "2")); err != nil {
			t.Error(err)
		}
	})()

	if h, err := mem.History(ctx, "+2"); err != nil || len(h) != 2 {
		t.Fatalf("History(+2) = %d messages, %v; want the other process's turn", len(h), err)
	}
	if !ran {
		t.Fatal("the reader never found the corrupt file")
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved aside %d files, want only the corrupt one: %v", len(aside), aside)
	}
	if got, _ := os.ReadFile(aside[0]); !bytes.Equal(got, junk) {
		t.Fatalf("the file moved aside is not the corrupt one:\n%s", got)
	}
	// The reader takes the valid file as it is: it cannot tell +1's absence
	// from a Clear by the process that wrote it, so it does not bring +1
	// back. (What the corrupt file held is in the file moved aside, which
	// that process logged.)
	if err := mem.SaveTurn(ctx, "+3", storetest.TextTurn("three", "3")); err != nil {
		t.Fatal(err)
	}
	if got := phonesInFile(t, path); got != "+2 +3" {
		t.Fatalf("the file after the next save holds %q, want +2 +3", got)
	}
}

// TestUnreadableLastActiveKept: a conversation whose last_active cannot be
// read counts as expired, and until it is accessed the value is written back
// exactly as it was, not as a made-up time (which Python's fromisoformat
// would refuse).
func TestUnreadableLastActiveKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	turn := `[{"messages": [{"role": "user", "content": "hi"}]}]`
	doc := `{
  "+1": {"last_active": "last tuesday", "turns": ` + turn + `},
  "+2": {"last_active": 1740393300, "turns": ` + turn + `},
  "+3": {"turns": ` + turn + `, "nickname": "Jo"},
  "+4": {"last_active": "0000-01-01T00:00:00", "turns": ` + turn + `}
}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	log, buf := logBuffer()
	s, mem := open(t, path, time.Now(), &jsonfile.Options{Logger: log})
	if !strings.Contains(buf.String(), "unreadable last_active") || !strings.Contains(buf.String(), "conversations=4") {
		t.Errorf("the unreadable times were not logged with their count:\n%s", buf)
	}
	sums, err := mem.List(ctx)
	if err != nil || len(sums) != 4 {
		t.Fatalf("List = %v, %v; want the 4 conversations", sums, err)
	}
	for _, sum := range sums {
		if !sum.Expired {
			t.Errorf("%s with an unreadable last_active is not expired", sum.Phone)
		}
	}
	if err := mem.SaveTurn(ctx, "+5", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	var file map[string]map[string]json.RawMessage
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for phone, want := range map[string]string{"+1": `"last tuesday"`, "+2": `1740393300`, "+3": ``, "+4": `"0000-01-01T00:00:00"`} {
		if got := string(file[phone]["last_active"]); got != want {
			t.Errorf("%s: last_active written back as %s, want %s", phone, got, want)
		}
	}
	if string(file["+3"]["nickname"]) != `"Jo"` {
		t.Errorf("+3 lost its other keys: %s", data)
	}
	// Accessing one deletes it, as any expired conversation.
	if h, err := mem.History(ctx, "+1"); err != nil || len(h) != 0 {
		t.Fatalf("History(+1) = %d messages, %v; want none", len(h), err)
	}
	if _, err := s.Load(ctx, "+1"); !errors.Is(err, conversation.ErrNotFound) {
		t.Fatalf("the expired conversation was not deleted on access: %v", err)
	}
}

func TestMustExist(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo", "conversations.json")
	_, err := jsonfile.Open(missing, &jsonfile.Options{Logger: quiet, MustExist: true})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "no conversations file at "+missing) {
		t.Fatalf("Open of a missing file with MustExist: %v; want fs.ErrNotExist naming the path", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "typo")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open with MustExist created the folder: %v", err)
	}
	// In an existing folder: no lock file either.
	if _, err := jsonfile.Open(filepath.Join(dir, "c.json"), &jsonfile.Options{Logger: quiet, MustExist: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing file with MustExist: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Open with MustExist created %v", entries)
	}
	if _, err := jsonfile.Open(dir, &jsonfile.Options{Logger: quiet, MustExist: true}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Open of a folder with MustExist: %v", err)
	}

	path := filepath.Join(dir, "c.json")
	_, mem := open(t, path, time.Now(), nil)
	if err := mem.SaveTurn(ctx, "+1", storetest.TextTurn("a", "b")); err != nil {
		t.Fatal(err)
	}
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if l, err := s.List(ctx); err != nil || len(l) != 1 {
		t.Fatalf("List of an existing file opened with MustExist = %v, %v", l, err)
	}
}
