package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

func BenchmarkRecent(b *testing.B) {
	path := filepath.Join(b.TempDir(), "mombot.db")
	storetest.BenchRecent(b, func() (conversation.Store, error) { return sqlite.Open(path, nil) })
}
