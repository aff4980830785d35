package delivery_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/mombot/mombot/delivery"
)

// echo answers every message with its body, and keeps what it sends.
type echo struct {
	mu   sync.Mutex
	sent []string
}

func (*echo) Answer(ctx, held context.Context, m delivery.Message) ([]string, error) {
	return []string{"you said " + string(m.Body)}, nil
}

func (e *echo) Send(ctx context.Context, m delivery.Message, parts []string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range parts {
		e.sent = append(e.sent, m.Key+" "+p)
	}
	return len(parts), nil
}

// A Pipeline on an inbox file: Accept keeps a message on disk before the
// webhook is acknowledged, and the Pipeline answers it in the background;
// a second delivery of it is a duplicate.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "inbox")
	defer os.RemoveAll(dir)
	inbox, err := delivery.OpenFile(filepath.Join(dir, "whatsapp-inbox.json"), nil)
	if err != nil {
		log.Fatal(err)
	}
	h := &echo{}
	p := delivery.New(h, &delivery.Options{Inbox: inbox, Logger: quiet})
	ctx := context.Background()
	m := delivery.Message{ID: "wamid.1", Key: "+14155551234", Body: []byte(`"hi"`)}
	fmt.Println(p.Accept(ctx, m)[0])
	if err := p.Shutdown(ctx); err != nil { // answers what was accepted
		log.Fatal(err)
	}
	fmt.Println(h.sent)
	p = delivery.New(h, &delivery.Options{Inbox: inbox, Logger: quiet})
	defer p.Shutdown(ctx)
	fmt.Println(p.Accept(ctx, m)[0])
	// Output:
	// <nil>
	// [+14155551234 you said "hi"]
	// delivery: message waiting or handled already
}
