package jsonfile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storetest"
)

func TestReplacer(t *testing.T) {
	storetest.RunReplacer(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "data", "conversations.json")
		return func() (conversation.Store, error) { return jsonfile.Open(path, &jsonfile.Options{Logger: quiet}) }
	})
}

// TestReplaceKeepsExtraKeys: keys of a conversation object that mombot does
// not know survive a Replace, as they survive a save.
func TestReplaceKeepsExtraKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.json")
	if err := os.WriteFile(path, []byte(`{"+1": {"last_active": "2026-02-24T10:00:00", "turns": [], "note": "keep me"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := conversation.Conversation{Phone: "+1", LastActive: time.Date(2026, 2, 24, 11, 0, 0, 0, time.UTC),
		Turns: []conversation.Turn{{Messages: storetest.TextTurn("hi", "hello")}}}
	if ok, err := s.Replace(context.Background(), c, time.Hour); !ok || err != nil {
		t.Fatalf("Replace = %v, %v", ok, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"note": "keep me"`, `"last_active": "2026-02-24T11:00:00"`, `"hello"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("file lacks %s:\n%s", want, data)
		}
	}
}
