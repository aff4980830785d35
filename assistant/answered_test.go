package assistant_test

import (
	"context"
	"testing"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
)

// A message handled again after its turn was saved (its holder died
// before sending the reply, and the next holder answers it anew) gets the
// saved answer, without asking the model again, and the conversation holds
// its turn once.
func TestMessageAnsweredAndSavedIsNotAskedAgain(t *testing.T) {
	srv := anthropictest.NewServer(t)
	mem, _ := conversation.New(memstore.New(), nil)
	a, err := assistant.New(srv.Client(), mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(anthropictest.Text("Milk is on the list."), anthropictest.Text("It is Tuesday."))
	ctx := context.Background()
	in := assistant.Inbound{From: erin, Text: "add milk", ID: "wamid.once"}
	first, err := a.Handle(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.Handle(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if again.Text != first.Text || !again.Stored {
		t.Errorf("handled again: %q (stored %v), want the saved answer %q", again.Text, again.Stored, first.Text)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
	// Another message is answered as usual, after the one turn.
	if r, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "what day is it", ID: "wamid.next"}); err != nil || r.Text != "It is Tuesday." {
		t.Fatalf("next message: %q, %v", r.Text, err)
	}
	h, err := mem.History(ctx, erin)
	if err != nil {
		t.Fatal(err)
	}
	var users int
	for _, m := range h {
		if m.Role == conversation.RoleUser {
			users++
		}
	}
	if users != 2 {
		t.Errorf("%d user messages stored, want 2: each message's turn once", users)
	}
}
