package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

func TestReplacer(t *testing.T) {
	storetest.RunReplacer(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "mombot.db")
		return func() (conversation.Store, error) { return sqlite.Open(path, nil) }
	})
}
