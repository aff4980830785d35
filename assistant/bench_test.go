package assistant_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

// priorTurns returns n turns like the original design's: a text turn and
// a tool turn in turn, each some hundreds of bytes.
func priorTurns(n int) [][]conversation.Message {
	out := make([][]conversation.Message, n)
	for i := range out {
		user := fmt.Sprintf("[Tue 24 Feb 2026 10:%02d PST] [From Erin]: find me a chicken dinner recipe, something quick for %d people", i, i+2)
		if i%2 == 0 {
			out[i] = storetest.ToolTurn(user, fmt.Sprintf("toolu_bench_%d", i), "Found 5 recipes: 1. Chicken tacos 2. Lemon chicken 3. Chicken soup 4. Chicken curry 5. Chicken salad", "Here are five chicken dinners:\n1. Chicken tacos\n2. Lemon chicken\n3. Chicken soup\n4. Chicken curry\n5. Chicken salad")
		} else {
			out[i] = storetest.TextTurn(user, "Number 2, lemon chicken, takes 30 minutes: chicken thighs, lemons, garlic, thyme. Want me to add them to the grocery list?")
		}
	}
	return out
}

type benchStore struct {
	name string
	open func(b *testing.B) conversation.Store
}

var benchStores = []benchStore{
	{"memstore", func(*testing.B) conversation.Store { return memstore.New() }},
	{"jsonfile", func(b *testing.B) conversation.Store {
		s, err := jsonfile.Open(filepath.Join(b.TempDir(), "conversations.json"), nil)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
	{"sqlite", func(b *testing.B) conversation.Store {
		s, err := sqlite.Open(filepath.Join(b.TempDir(), "conversations.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
}

// BenchmarkMemory measures what memory adds to one message with 5 prior
// turns, the API call aside: loading the history, rendering it into the
// request, and saving the new turn.
func BenchmarkMemory(b *testing.B) {
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			store := st.open(b)
			defer store.Close()
			clock := storetest.NewClock(time.Date(2026, 2, 24, 18, 0, 0, 0, time.UTC))
			mem, err := conversation.New(store, &conversation.Options{Now: clock.Now})
			if err != nil {
				b.Fatal(err)
			}
			a, err := assistant.New(anthropictest.NewServer(b).Client(), mem, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			prior := priorTurns(5)
			turn := storetest.TextTurn("[Tue 24 Feb 2026 10:35 PST] [From Erin]: add it to the list", "Done: lemon chicken's ingredients are on the grocery list.")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				phone := fmt.Sprintf("+1415555%04d", i%10)
				_ = mem.Clear(ctx, phone)
				for _, t := range prior {
					if err := mem.SaveTurn(ctx, phone, t); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()

				h, err := mem.History(ctx, phone)
				if err != nil || len(h) != 16 {
					b.Fatalf("history: %d messages, %v", len(h), err)
				}
				if _, err := a.Body(h, turn[:1]); err != nil {
					b.Fatal(err)
				}
				if err := mem.SaveTurn(ctx, phone, turn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHandle measures a whole message through the fake API on the
// loopback interface, with no history (the system sender) and with 5
// prior turns; the difference is what memory costs end to end.
func BenchmarkHandle(b *testing.B) {
	for _, prior := range []int{0, 5} {
		b.Run(fmt.Sprintf("prior=%d", prior), func(b *testing.B) {
			srv := anthropictest.NewServer(b)
			done := anthropictest.Text("Done.")
			done.Usage = &anthropictest.Usage{InputTokens: 1, OutputTokens: 1}
			srv.Respond(func(anthropictest.Request) anthropictest.Response { return done })
			mem, _ := conversation.New(memstore.New(), nil)
			reg, _ := assistant.NewRegistry(echoTool("search"))
			a, err := assistant.New(srv.Client(), mem, &assistant.Options{Tools: reg})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			turns := priorTurns(prior)
			b.ReportAllocs()
			for b.Loop() {
				from := conversation.SystemSender
				if prior > 0 {
					b.StopTimer()
					from = erin
					_ = mem.Clear(ctx, from)
					for _, t := range turns {
						_ = mem.SaveTurn(ctx, from, t)
					}
					b.StartTimer()
				}
				if _, err := a.Handle(ctx, assistant.Inbound{From: from, Text: "add it to the list"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
