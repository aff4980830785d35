package redis_test

import (
	"context"
	"log"

	conversationredis "github.com/mombot/mombot/conversation/redis"
	"github.com/mombot/mombot/delivery/redis"
)

// One sender's messages, handled one at a time across replicas.
func ExampleLocker_Lock() {
	ctx := context.Background()
	store, err := conversationredis.Open(ctx, "redis://127.0.0.1:6379/0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	locker, err := redis.NewLocker(store.Client(), &redis.LockerOptions{Prefix: store.Prefix()})
	if err != nil {
		log.Fatal(err)
	}
	held, unlock, err := locker.Lock(ctx, "+14155551234")
	if err != nil {
		log.Fatal(err)
	}
	defer unlock()
	for _, step := range []string{"load the history", "ask the model", "save the turn"} {
		if held.Err() != nil {
			// The lock passed to another replica: stop, it takes over.
			return
		}
		_ = step
	}
}
