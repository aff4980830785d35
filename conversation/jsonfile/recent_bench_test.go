package jsonfile_test

import (
	"path/filepath"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storetest"
)

func BenchmarkRecent(b *testing.B) {
	path := filepath.Join(b.TempDir(), "conversations.json")
	storetest.BenchRecent(b, func() (conversation.Store, error) { return jsonfile.Open(path, &jsonfile.Options{Logger: quiet}) })
}
