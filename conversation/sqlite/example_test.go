package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
)

func Example() {
	dir, err := os.MkdirTemp("", "mombot-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// A server opens the store once and closes it on shutdown; now and
	// then it calls mem.Sweep to delete expired conversations.
	store, err := sqlite.Open(filepath.Join(dir, "mombot.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	mem, err := conversation.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	err = mem.SaveTurn(ctx, "+14155551234", []conversation.Message{
		conversation.UserText("What's for dinner?"),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Tacos.")),
	})
	if err != nil {
		log.Fatal(err)
	}
	history, err := mem.History(ctx, "+14155551234")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range history {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// user: What's for dinner?
	// assistant: Tacos.
}

func ExampleStore_Sweep() {
	dir, err := os.MkdirTemp("", "mombot-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(filepath.Join(dir, "mombot.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	ctx := context.Background()
	now := time.Now()
	lim := conversation.Limits{Timeout: 30 * time.Minute, MaxTurns: 10}
	turn := conversation.Turn{Messages: []conversation.Message{conversation.UserText("hello")}}
	if err := store.Append(ctx, "+1", turn, now.Add(-2*time.Hour), lim); err != nil {
		log.Fatal(err)
	}
	if err := store.Append(ctx, "+2", turn, now, lim); err != nil {
		log.Fatal(err)
	}

	// Delete what has been inactive for more than the timeout.
	n, err := store.Sweep(ctx, now.Add(-lim.Timeout-time.Nanosecond))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("swept", n)
	// Output: swept 1
}
