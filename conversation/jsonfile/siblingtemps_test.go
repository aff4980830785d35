package jsonfile_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
)

// The files kept next to conversations.json (the usage ledger, the recent
// messages) are written atomically too, so a writer killed mid-write leaves
// a temporary file; the first change of each removes what is left.
func TestSiblingFilesRemoveLeftoverTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conversations.json")
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	usageTemp := filepath.Join(dir, "."+filepath.Base(jsonfile.UsagePath(path))+".tmp-7")
	recentTemp := filepath.Join(dir, "."+filepath.Base(jsonfile.RecentPath(path))+".tmp-7")
	for _, p := range []string{usageTemp, recentTemp} {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	if err := s.AddUsage(ctx, "+14155551234", now, conversation.Usage{Messages: 1, Calls: 1, InputTokens: 10}); err != nil {
		t.Fatal(err)
	}
	if err := s.RememberMessages(ctx, "+14155551234", now, conversation.RecentMessage{ID: "wamid.1", Role: conversation.RoleUser, Text: "hi", At: now}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{usageTemp, recentTemp} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the first write (stat: %v)", filepath.Base(p), err)
		}
	}
}
