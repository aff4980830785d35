package jsonfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
)

// FuzzLoad opens arbitrary bytes as a conversations file. Whatever they are,
// opening does not fail or panic: a file that does not parse is moved aside,
// whole; and when it parses, a write of another record leaves every record
// it held as it was, byte for byte and at the same version, in a file that
// parses again. Its seed corpus, testdata/fuzz/FuzzLoad, holds a file the
// Python original wrote and broken variants of it and of the format
// (truncated, a BOM, unreadable times, turns the API rejects, extra keys,
// wrong types).
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `[]`, `null`, `{"+1": null}`, `{"+1": {}}`, `{"+1": {"turns": 5}}`,
		`{"+1": {"last_active": "2026-02-24T10:35:00", "turns": [{"messages": [{"role": "user", "content": "hi"}]}]}}`,
		`{"+1": {"last_active": "2026-02-24T10:35:00", "turns": [{"messages": [{"role": "user", "content": "\u00e9 \ud83c"}]}]}, "+1": 3}`,
		"{\"\\ud83c\": 1, \"\xff\": [ 1 ,\n 2 ]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "conversations.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
		if err != nil {
			t.Fatalf("Open failed on a bad file instead of moving it aside: %v", err)
		}
		defer s.Close()
		if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) == 1 {
			if got, _ := os.ReadFile(aside[0]); string(got) != string(data) {
				t.Fatalf("the file moved aside is not the file: %q", got)
			}
		}
		before, err := s.List(ctx, conversation.Conversations, "")
		if err != nil {
			t.Fatal(err)
		}
		const key = "\x00fuzz"
		var version int64 // of a record the file may already hold under key
		for _, r := range before {
			if r.Key == key {
				version = r.Version
			}
		}
		if _, err := s.Put(ctx, conversation.Conversations, conversation.Record{Key: key, Data: []byte(`{}`), Version: version}, 0); err != nil {
			t.Fatalf("a write after opening: %v", err)
		}
		s2, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) > 1 {
			t.Fatalf("the file this package wrote does not parse: %v", aside)
		}
		for _, want := range before {
			if want.Key == key {
				continue
			}
			got, err := s2.Get(ctx, conversation.Conversations, want.Key)
			if err != nil || string(got.Data) != string(want.Data) || got.Version != want.Version {
				t.Fatalf("%q after a rewrite: %q v%d (%v), was %q v%d", want.Key, got.Data, got.Version, err, want.Data, want.Version)
			}
		}
	})
}
