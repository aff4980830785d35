package jsonfile_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storetest"
)

// FuzzLoad opens arbitrary bytes as a conversations file. Whatever they are,
// opening does not fail or panic, every history served is one the Messages
// API accepts, and a save followed by a reopen serves the same bytes again.
// Its seed corpus, testdata/fuzz/FuzzLoad, holds a file the Python original
// wrote and broken variants of it and of the format (truncated, a BOM,
// unreadable times, turns the API rejects, extra keys, wrong types).
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `[]`, `null`, `{"+1": null}`, `{"+1": {}}`, `{"+1": {"turns": 5}}`,
		`{"+1": {"last_active": "2026-02-24T10:35:00", "turns": [{"messages": [{"role": "user", "content": "hi"}]}]}}`,
		`{"+1": {"last_active": "x", "turns": [{"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "b"}]}]}]}}`,
		`{"+1": {"last_active": "2026-02-24T10:35:00Z", "turns": [{"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}]}, {"messages": [{"role": "user", "content": "again"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}]}]}}`,
		`{"+1": {"last_active": "2026-02-24T10:35:00", "turns": [{"messages": [{"role": "user", "content": "\u00e9 \ud83c"}]}]}, "+1": 3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "conversations.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		forever := &conversation.Options{Timeout: 1 << 62, Now: func() time.Time { return storetest.Start }}
		s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
		if err != nil {
			t.Fatalf("Open failed on a bad file instead of moving it aside: %v", err)
		}
		mem, _ := conversation.New(s, forever)
		sums, err := mem.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before := map[string][]conversation.Message{}
		for _, sum := range sums {
			h, err := mem.History(ctx, sum.Phone)
			if err != nil {
				continue // a key that is not a valid phone
			}
			if len(h) > 0 {
				if err := conversation.ValidateTurn(h); err != nil {
					t.Fatalf("history of %q would be rejected by the API: %v", sum.Phone, err)
				}
			}
			before[sum.Phone] = h
		}
		if err := mem.SaveTurn(ctx, "+fuzz", storetest.TextTurn("hi", "hello")); err != nil {
			t.Fatalf("save after loading: %v", err)
		}
		s.Close()

		s2, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) > 1 {
			t.Fatalf("the file this package wrote does not parse: %v", aside)
		}
		mem2, _ := conversation.New(s2, forever)
		for phone, want := range before {
			got, err := mem2.History(ctx, phone)
			if err != nil {
				t.Fatal(err)
			}
			if phone == "+fuzz" {
				continue
			}
			if len(got) != len(want) {
				t.Fatalf("%q: %d messages after rewrite, %d before", phone, len(got), len(want))
			}
			for i := range got {
				if !got[i].Equal(want[i]) {
					t.Fatalf("%q message %d changed on rewrite:\n%s\n%s", phone, i, want[i].Content, got[i].Content)
				}
			}
		}
	})
}
