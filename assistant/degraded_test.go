package assistant_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
)

// flakyStore is a store that can be switched off, like a Redis that restarts.
type flakyStore struct {
	*memstore.Store
	down atomic.Bool
}

var errDown = errors.New("connection refused")

func (s *flakyStore) Get(ctx context.Context, kind conversation.Kind, key string) (conversation.Record, error) {
	if s.down.Load() {
		return conversation.Record{}, errDown
	}
	return s.Store.Get(ctx, kind, key)
}

func (s *flakyStore) Put(ctx context.Context, kind conversation.Kind, r conversation.Record, keep time.Duration) (int64, error) {
	if s.down.Load() {
		return 0, errDown
	}
	return s.Store.Put(ctx, kind, r, keep)
}

// While the store is down the assistant answers without memory, says so
// in the log, and tells the person that the turn is not saved; once it is
// back, memory works again without a restart.
func TestStoreDownAnswersWithoutMemory(t *testing.T) {
	srv := anthropictest.NewServer(t)
	store := &flakyStore{Store: memstore.New()}
	mem, _ := conversation.New(store, nil)
	var logs syncBuffer
	a, err := assistant.New(srv.Client(), mem, &assistant.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv.Enqueue(anthropictest.Text("one"), anthropictest.Text("two"), anthropictest.Text("three"))

	if _, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "first"}); err != nil {
		t.Fatal(err)
	}
	store.down.Store(true)
	r, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "second"})
	if want := "two\n\n" + apology.NotSaved; r.Text != want {
		t.Fatalf("reply while the store is down = %q, want the model's answer and that it is not saved, %q", r.Text, want)
	}
	if !errors.Is(err, errDown) {
		t.Fatalf("err = %v, want the failed save reported", err)
	}
	if n := len(srv.Requests()[1].Params.Messages); n != 1 {
		t.Fatalf("the request while the store is down has %d messages, want 1 (no history)", n)
	}
	if !strings.Contains(logs.String(), "answering without history") {
		t.Fatalf("the log does not say memory is unavailable:\n%s", logs.String())
	}
	store.down.Store(false)
	if _, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "third"}); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()[2].Params.Messages); n != 3 {
		t.Fatalf("after the store came back the request has %d messages, want 3 (the first turn, then this one)", n)
	}
	checkLog(t, logs.String())
}

// When a tool ran (a list changed) and then the turn cannot be saved, the
// person is told that this conversation was not saved, after the answer,
// as without a tool round (above).
func TestNotSavedAfterToolRound(t *testing.T) {
	for _, tt := range []struct {
		name  string
		then  anthropictest.Response
		reply string
	}{
		{"answer", anthropictest.Text("Milk is on the list."), "Milk is on the list.\n\n" + apology.NotSaved},
		{"API failure", anthropictest.Overloaded(), apology.Overloaded + " Some of what you asked may already be done; ask me what's left.\n\n" + apology.NotSaved},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServer(t)
			store := &flakyStore{Store: memstore.New()}
			mem, _ := conversation.New(store, nil)
			// The disk fills while the tool runs.
			tool := funcTool{name: "add_item", run: func(context.Context, assistant.Call) (string, error) {
				store.down.Store(true)
				return "added", nil
			}}
			reg, err := assistant.NewRegistry(tool)
			if err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			a, err := assistant.New(srv.Client(), mem, &assistant.Options{Tools: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			srv.Enqueue(anthropictest.ToolUse("", anthropictest.Call{Name: "add_item", Input: map[string]string{"item": "milk"}}), tt.then)
			r, err := a.Handle(context.Background(), assistant.Inbound{From: erin, Text: "add milk"})
			if r.Text != tt.reply {
				t.Errorf("reply = %q, want %q", r.Text, tt.reply)
			}
			if !errors.Is(err, apology.ErrNotSaved) || !errors.Is(err, errDown) {
				t.Errorf("err = %v, want ErrNotSaved wrapping the store's error", err)
			}
		})
	}
}
