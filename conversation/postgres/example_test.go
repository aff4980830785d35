package postgres_test

import (
	"context"
	"log"
	"os"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/postgres"
)

func Example() {
	ctx := context.Background()
	// A server opens the store once, which sets up its tables in the
	// schema, and closes it on shutdown. Replicas open the same URL and
	// schema.
	store, err := postgres.Open(ctx, os.Getenv("MOMBOT_STORE"), &postgres.Options{Schema: "family"})
	if err != nil {
		log.Fatal(err) // never shows the URL's password
	}
	defer store.Close()

	mem, err := conversation.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	err = mem.SaveTurn(ctx, "+14155551234", []conversation.Message{
		conversation.UserText("What's for dinner?"),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Tacos.")),
	})
	if err != nil {
		log.Fatal(err)
	}
}
