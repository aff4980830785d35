package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
)

func Example() {
	dir, err := os.MkdirTemp("", "mombot-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// A server opens the store once, which sets up the database, and
	// closes it on shutdown.
	store, err := sqlite.Open(filepath.Join(dir, "mombot.db"), &sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
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

// A command that only looks opens the database read-only: it reads what a
// server has committed, also while the server runs, and creates, sets up
// and writes nothing.
func ExampleOptions_readOnly() {
	dir, err := os.MkdirTemp("", "mombot-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mombot.db")

	server, err := sqlite.Open(path, &sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()
	ctx := context.Background()
	serverMem, _ := conversation.New(server, nil)
	if err := serverMem.SaveTurn(ctx, "+14155551234", []conversation.Message{conversation.UserText("hello")}); err != nil {
		log.Fatal(err)
	}

	if _, err := sqlite.Open(filepath.Join(dir, "typo.db"), &sqlite.Options{ReadOnly: true}); errors.Is(err, fs.ErrNotExist) {
		fmt.Println("typo.db: not there, and not created")
	}
	look, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err) // a damaged file wraps ErrCorrupt; a newer schema ErrSchemaTooNew
	}
	defer look.Close()
	mem, _ := conversation.New(look, nil)
	sums, err := mem.List(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(sums), "conversation,", sums[0].Turns, "turn")
	if err := mem.Clear(ctx, "+14155551234"); errors.Is(err, conversation.ErrReadOnly) {
		fmt.Println("clear refused")
	}
	// Output:
	// typo.db: not there, and not created
	// 1 conversation, 1 turn
	// clear refused
}
