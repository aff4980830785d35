package redis_test

import (
	"context"
	"log"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/redis"
)

// A Memory on Redis: every replica that opens the same database and prefix
// shares the conversations.
func ExampleOpen() {
	ctx := context.Background()
	store, err := redis.Open(ctx, "redis://127.0.0.1:6379/0", &redis.Options{Prefix: "mombot:"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	mem, err := conversation.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	history, err := mem.History(ctx, "+14155551234")
	if err != nil {
		log.Fatal(err)
	}
	_ = history // put in front of the new message
}
