package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant/anthropictest"
)

// TestMemoryE2E: long-term notes through mombot ask, one process per
// message, on the JSON file and the SQLite stores: a note written by
// Erin is shown to Jason's next session, listed by mombot memory list,
// kept by history clear, and once forgotten (by the forget tool, or by
// mombot memory forget) its text is in no byte of the data folder and in
// no later request.
func TestMemoryE2E(t *testing.T) {
	bin := buildMombot(t)
	for _, tt := range []struct{ name, store, by string }{
		{"FileForgetTool", "data/conversations.json", "tool"},
		{"SQLiteForgetCommand", "sqlite:data/mombot.db", "command"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newAskFixture(t, bin)
			if strings.HasPrefix(tt.store, "sqlite:") {
				f.store = "sqlite:" + filepath.Join(f.dir, strings.TrimPrefix(tt.store, "sqlite:"))
				if err := os.MkdirAll(filepath.Join(f.dir, "data"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			testMemoryE2E(t, f, tt.by)
		})
	}
}

func testMemoryE2E(t *testing.T, f *askFixture, by string) {
	const secret = "Emma is allergic to peanuts"
	f.claude.Enqueue(
		anthropictest.ToolUse("", anthropictest.Call{ID: "toolu_mem_r1", Name: "remember", Input: map[string]any{"text": secret, "scope": "family"}}),
		anthropictest.Text("Noted as #1; say 'forget 1' to remove it."),
	)
	_, reqs := f.ask(askErin, "please remember that Emma is allergic to peanuts")
	if len(reqs) != 2 || !bytes.Contains(reqs[1].Body, []byte(`Noted as #1 (family).`)) {
		t.Fatalf("remember: %d requests, the second %s", len(reqs), reqs[len(reqs)-1].Body)
	}
	var listed []map[string]any
	out, stderr, err := f.mombot("memory", "list", "--json", "14155555678")
	if err != nil {
		t.Fatalf("memory list: %v\n%s", err, stderr)
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1 {
		t.Fatalf("memory list --json printed %q (%v), want one note", out, err)
	}
	n := listed[0]
	created, _ := n["created"].(string)
	if _, err := time.Parse(time.RFC3339, created); err != nil || n["id"] != 1.0 || n["scope"] != "family" || n["text"] != secret || n["author"] != "Erin" {
		t.Errorf("memory list --json = %s", out)
	}

	// Jason's next session shows it, in the system prompt.
	f.claude.Enqueue(anthropictest.Text("Hi Jason."))
	_, reqs = f.ask(askJason, "hi")
	if !bytes.Contains(reqs[0].Params.System, []byte("#1 (family) "+secret)) {
		t.Fatalf("Jason's first request does not show note #1: %s", reqs[0].Params.System)
	}
	// history clear leaves the notes alone.
	if _, stderr, err := f.mombot("history", "clear", askErin); err != nil {
		t.Fatalf("history clear: %v\n%s", err, stderr)
	}
	if out, _, _ := f.mombot("memory", "list", askErin); !strings.Contains(out, secret) {
		t.Errorf("after history clear, memory list = %q, want the note", out)
	}

	before := len(f.claude.Requests())
	switch by {
	case "tool":
		f.claude.Enqueue(
			anthropictest.ToolUse("", anthropictest.Call{ID: "toolu_mem_f1", Name: "forget", Input: map[string]any{"id": 1}}),
			anthropictest.Text("Forgotten."),
		)
		_, reqs = f.ask(askJason, "forget 1")
		if !bytes.Contains(reqs[1].Body, []byte("Forgot #1")) {
			t.Fatalf("forget's result: %s", reqs[1].Body)
		}
		// The request that called forget held the note; the one after,
		// in the same message, no longer does.
		before = len(f.claude.Requests()) - 1
	default:
		out, stderr, err := f.mombot("memory", "forget", askJason, "1")
		if err != nil || !strings.HasPrefix(out, "forgot #1 (family, by Erin)") {
			t.Fatalf("memory forget = %q, %v\n%s", out, err, stderr)
		}
	}
	f.claude.Enqueue(anthropictest.Text("Nothing noted about Emma."))
	f.ask(askJason, "what is Emma allergic to?")
	for _, r := range f.claude.Requests()[before:] {
		if bytes.Contains(bytes.ToLower(r.Body), []byte("peanuts")) {
			t.Errorf("a request after the forget holds the text: %s", r.Body)
		}
	}
	err = filepath.WalkDir(f.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(path) == "mombot.json" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(bytes.ToLower(data), []byte("peanuts")) {
			t.Errorf("after the forget %s still holds the text", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, _ := f.mombot("memory", "list", "--json", askErin); out != "[]\n" {
		t.Errorf("memory list --json after the forget = %q, want []", out)
	}
	// A stranger has no notes to list.
	if _, stderr, err := f.mombot("memory", "list", "+447700900123"); err == nil || !strings.Contains(stderr, "not in the family") {
		t.Errorf("memory list of a stranger = %v, %q; want refused", err, stderr)
	}
}
