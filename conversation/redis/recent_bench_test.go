package redis_test

import (
	"context"
	"testing"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/conversation/storetest"
)

func BenchmarkRecent(b *testing.B) {
	url, prefix := testURL(b), newPrefix(b)
	storetest.BenchRecent(b, func() (conversation.Store, error) {
		return redis.Open(context.Background(), url, &redis.Options{Prefix: prefix, Logger: quiet})
	})
}
