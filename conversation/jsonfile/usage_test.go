package jsonfile_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storetest"
)

var usageAt = time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)

// usageAdder adds one message's usage envCount times to each phone of
// envPhone, in turn.
func usageAdder() int {
	s, err := jsonfile.Open(os.Getenv(envPath), &jsonfile.Options{Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	count, _ := strconv.Atoi(os.Getenv(envCount))
	for n := range count {
		for _, phone := range strings.Split(os.Getenv(envPhone), ",") {
			u := conversation.Usage{Messages: 1, Calls: 2, InputTokens: int64(n + 1), OutputTokens: 10}
			if err := s.AddUsage(ctx, phone, usageAt, u); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	return 0
}

// Two processes adding to the ledger at once lose no addition: the lock
// file orders them.
func TestUsageTwoProcesses(t *testing.T) {
	const each = 30
	path := filepath.Join(t.TempDir(), "conversations.json")
	var cmds []*exec.Cmd
	for _, phones := range []string{"+shared,+alice", "+shared,+bob"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"=usage", envPath+"="+path, envPhone+"="+phones, envCount+"="+strconv.Itoa(each))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	s, _ := open(t, path, usageAt, nil)
	got, err := s.UsageSince(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	per := conversation.Usage{Messages: each, Calls: 2 * each, InputTokens: each * (each + 1) / 2, OutputTokens: 10 * each}
	want := map[string]conversation.Usage{"+alice": per, "+bob": per, "+shared": per.Add(per)}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	for _, d := range got {
		if d.Usage != want[d.Phone] {
			t.Errorf("%s: %+v, want %+v: an addition was lost", d.Phone, d.Usage, want[d.Phone])
		}
	}
}

// The ledger is a file of its own: conversations.json, which the Python
// original reads as phones and nothing else, never holds it.
func TestUsageFileIsApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	s, mem := open(t, path, usageAt, nil)
	if err := mem.SaveTurn(ctx, "+14155551234", storetest.TextTurn("hi", "hello")); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, "+14155555678", usageAt, conversation.Usage{Messages: 1, OutputTokens: 5}); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatalf("AddUsage changed conversations.json:\n%s", after)
	}
	if got := jsonfile.UsagePath(path); got != filepath.Join(filepath.Dir(path), "conversations.usage.json") {
		t.Fatalf("UsagePath = %s", got)
	}
	data, err := os.ReadFile(jsonfile.UsagePath(path))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Usage map[string]map[string]map[string]int64 `json:"usage"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if got := f.Usage["+14155555678"]["2026-02-24"]; got["messages"] != 1 || got["output_tokens"] != 5 {
		t.Fatalf("ledger file:\n%s", data)
	}
	if fi, err := os.Stat(jsonfile.UsagePath(path)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ledger file mode: %v, %v; want 0600", fi.Mode(), err)
	}
}

// Keys of the ledger file other than "usage" (a later version's) are kept
// when it is rewritten.
func TestUsageFileKeepsOtherKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	if err := os.WriteFile(jsonfile.UsagePath(path), []byte(`{"version": 2, "usage": {"+1": {"2026-02-23": {"messages": 4}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := open(t, path, usageAt, nil)
	if err := s.AddUsage(ctx, "+1", usageAt, conversation.Usage{Messages: 1}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(jsonfile.UsagePath(path))
	if !strings.Contains(string(data), `"version": 2`) {
		t.Fatalf("the key \"version\" was dropped:\n%s", data)
	}
	got, err := s.UsageSince(ctx, time.Time{})
	if err != nil || len(got) != 2 || got[0].Messages != 4 || got[1].Messages != 1 {
		t.Fatalf("UsageSince = %+v, %v", got, err)
	}
}

// A ledger file that does not parse is reported by UsageSince, and moved
// aside, never overwritten, by the next AddUsage, which counts anew.
func TestUsageCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	upath := jsonfile.UsagePath(path)
	for _, bad := range []string{`{"usage": {"+1": {"yesterday": {}}}}`, `{"usage": {"+1": {"2026-02-23": {"messages": -1}}}}`, `{"usage": [`, ``} {
		if err := os.WriteFile(upath, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		log, logs := logBuffer()
		s, _ := open(t, path, usageAt, &jsonfile.Options{Logger: log})
		if _, err := s.UsageSince(ctx, time.Time{}); err == nil || !strings.Contains(err.Error(), upath) {
			t.Fatalf("UsageSince of %q: err = %v, want one naming the file", bad, err)
		}
		if err := s.AddUsage(ctx, "+1", usageAt, conversation.Usage{Messages: 1}); err != nil {
			t.Fatalf("AddUsage over %q: %v", bad, err)
		}
		asides, _ := filepath.Glob(upath + ".corrupt-*")
		if len(asides) != 1 {
			t.Fatalf("%d files moved aside, want 1", len(asides))
		}
		kept, _ := os.ReadFile(asides[0])
		if string(kept) != bad {
			t.Fatalf("moved-aside file holds %q, want %q", kept, bad)
		}
		os.Remove(asides[0])
		if !strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("no error logged:\n%s", logs)
		}
		if got, err := s.UsageSince(ctx, time.Time{}); err != nil || len(got) != 1 || got[0].Messages != 1 {
			t.Fatalf("after counting anew: %+v, %v", got, err)
		}
	}
}

// A store that only reads the ledger creates nothing: commands such as
// mombot usage open the store with MustExist and must not leave files.
func TestUsageReadCreatesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.UsageSince(ctx, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("UsageSince without a ledger file = %+v, %v", got, err)
	}
	for _, p := range []string{jsonfile.UsagePath(path), jsonfile.UsagePath(path) + ".lock"} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists after a read: %v", p, err)
		}
	}
}

// A closed store refuses the ledger too.
func TestUsageClosed(t *testing.T) {
	s, err := jsonfile.Open(filepath.Join(t.TempDir(), "conversations.json"), &jsonfile.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, "+1", usageAt, conversation.Usage{Messages: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(ctx, "+1", usageAt, conversation.Usage{Messages: 1}); !errors.Is(err, jsonfile.ErrClosed) {
		t.Errorf("AddUsage after Close: %v, want ErrClosed", err)
	}
	if _, err := s.UsageSince(ctx, time.Time{}); !errors.Is(err, jsonfile.ErrClosed) {
		t.Errorf("UsageSince after Close: %v, want ErrClosed", err)
	}
}

// Only a ledger that does not parse is moved aside: one that cannot be read
// (here a folder where the file should be) is an error, and stays.
func TestUsageUnreadableStays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	if err := os.Mkdir(jsonfile.UsagePath(path), 0o700); err != nil {
		t.Fatal(err)
	}
	s, _ := open(t, path, usageAt, nil)
	if err := s.AddUsage(ctx, "+1", usageAt, conversation.Usage{Messages: 1}); err == nil {
		t.Errorf("AddUsage over a folder: no error")
	}
	if fi, err := os.Stat(jsonfile.UsagePath(path)); err != nil || !fi.IsDir() {
		t.Errorf("the folder was moved: %v", err)
	}
	if asides, _ := filepath.Glob(jsonfile.UsagePath(path) + ".corrupt-*"); len(asides) != 0 {
		t.Errorf("moved aside: %v", asides)
	}
}
