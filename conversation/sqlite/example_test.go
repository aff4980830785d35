package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// A command that only looks opens the database read-only: it reads what a
// server has committed, also while the server runs, and creates, upgrades
// and changes nothing.
func ExampleOptions_readOnly() {
	dir, err := os.MkdirTemp("", "mombot-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mombot.db")

	server, err := sqlite.Open(path, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()
	ctx := context.Background()
	turn := conversation.Turn{Messages: []conversation.Message{conversation.UserText("hello")}}
	if err := server.Append(ctx, "+14155551234", turn, time.Now(), conversation.Limits{MaxTurns: 10}); err != nil {
		log.Fatal(err)
	}

	if _, err := sqlite.Open(filepath.Join(dir, "typo.db"), &sqlite.Options{ReadOnly: true}); errors.Is(err, fs.ErrNotExist) {
		fmt.Println("typo.db: not there, and not created")
	}
	look, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err) // a damaged file wraps ErrCorrupt; an old schema ErrSchemaTooOld
	}
	defer look.Close()
	sums, err := look.List(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(sums), "conversation,", sums[0].Turns, "turn")
	if err := look.Delete(ctx, "+14155551234"); errors.Is(err, sqlite.ErrReadOnlyStore) {
		fmt.Println("delete refused")
	}
	// Output:
	// typo.db: not there, and not created
	// 1 conversation, 1 turn
	// delete refused
}
