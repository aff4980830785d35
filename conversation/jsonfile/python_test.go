package jsonfile_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation/storetest"
)

// python runs script with python3 and the arguments, and fails the test
// unless it prints "ok". Without python3 the test is skipped, or fails in CI
// (MOMBOT_CI set), which must run it.
func python(t *testing.T, script string, args ...string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("MOMBOT_CI") != "" {
			t.Fatal("python3 is not installed, and CI (MOMBOT_CI is set) must run this test")
		}
		t.Skip("python3 is not installed; the format is still checked by TestReadsWhatPythonWrote")
	}
	out, err := exec.Command(py, append([]string{"-c", script}, args...)...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("python: %v\n%s", err, out)
	}
}

// TestPythonReadsWhatWeWrote runs the original module's reading logic on a
// file this package wrote.
func TestPythonReadsWhatWeWrote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	at := time.Date(2026, 2, 24, 10, 35, 0, 123456000, time.Local)
	_, mem := open(t, path, at, nil)
	if err := mem.SaveTurn(ctx, "+14155551234", storetest.ToolTurn("find <chicken> é", "toolu_1", "found", "here")); err != nil {
		t.Fatal(err)
	}
	if err := mem.SaveTurn(ctx, "+14155555678", storetest.TextTurn("hi", "hello")); err != nil {
		t.Fatal(err)
	}
	python(t, `
import json, sys, datetime
data = json.load(open(sys.argv[1]))
assert sorted(data) == ["+14155551234", "+14155555678"], sorted(data)
conv = data["+14155551234"]
last = datetime.datetime.fromisoformat(conv["last_active"])
assert last.tzinfo is None, "last_active must be naive"
assert last == datetime.datetime(2026, 2, 24, 10, 35, 0, 123456), last
msgs = [m for t in conv["turns"] for m in t["messages"]]
assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant"]
assert msgs[0]["content"] == "find <chicken> é", msgs[0]["content"]
assert msgs[1]["content"][1]["type"] == "tool_use"
print("ok")
`, path)
}

// TestWeReadWhatPythonWrote has the original's way of saving (json.dump
// with indent=2, naive isoformat times) write the file, mombot read it and
// save for another person, and Python read and save again: the
// conversations mombot did not touch are what Python wrote, unknown keys
// and all.
func TestWeReadWhatPythonWrote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	python(t, `
import json, sys, datetime
now = datetime.datetime(2026, 2, 24, 10, 30, 0, 250000).isoformat()
data = {
  "+14155551234": {"last_active": now, "nickname": "Erin", "turns": [
    {"messages": [{"role": "user", "content": "[From Erin]: caf\u00e9?"},
                  {"role": "assistant", "content": [{"type": "text", "text": "Yes \u2615"}]}],
     "note": "kept"}]},
  "+14155550000": {"last_active": now, "turns": [
    {"messages": [{"role": "user", "content": "untouched"}]}]},
}
with open(sys.argv[1], "w") as f:
    json.dump(data, f, indent=2)
print("ok")
`, path)
	at := time.Date(2026, 2, 24, 10, 35, 0, 0, time.Local)
	_, mem := open(t, path, at, nil)
	h, err := mem.History(ctx, "+14155551234")
	if err != nil || len(h) != 2 || h[0].Text() != "[From Erin]: café?" || h[1].Text() != "Yes ☕" {
		t.Fatalf("History of what Python wrote = %v, %v", h, err)
	}
	if err := mem.SaveTurn(ctx, "+14155555678", storetest.TextTurn("hi from Go", "hello")); err != nil {
		t.Fatal(err)
	}
	python(t, `
import json, sys, datetime
data = json.load(open(sys.argv[1]))
now = datetime.datetime(2026, 2, 24, 10, 30, 0, 250000).isoformat()
assert data["+14155550000"] == {"last_active": now, "turns": [{"messages": [{"role": "user", "content": "untouched"}]}]}, data["+14155550000"]
erin = data["+14155551234"]
assert erin["nickname"] == "Erin" and erin["turns"][0]["note"] == "kept", erin
go = data["+14155555678"]
assert go["turns"][0]["messages"][0]["content"] == "hi from Go", go
go["turns"].append({"messages": [{"role": "user", "content": "and from Python"}]})
go["last_active"] = datetime.datetime(2026, 2, 24, 10, 36).isoformat()
with open(sys.argv[1], "w") as f:
    json.dump(data, f, indent=2)
print("ok")
`, path)
	h, err = mem.History(ctx, "+14155555678")
	if err != nil || len(h) != 3 || h[2].Text() != "and from Python" {
		t.Fatalf("History after Python saved again = %v, %v", h, err)
	}
}
