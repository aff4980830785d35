package memstore_test

import (
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/conversation/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		s := memstore.New()
		return func() (conversation.Store, error) { return s, nil }
	})
}
