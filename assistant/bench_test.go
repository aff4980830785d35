package assistant_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
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

// BenchmarkHandleCold measures a whole message whose sender's conversation
// this Memory has not read since it was last written elsewhere (a cold
// read: every turn decoded and checked), against the same message when its
// read cache holds the conversation. Each message is a tool round and a
// reply, about 2.7 kB as stored; before each one the sender's 10 stored
// turns of such messages (27 kB, storebench's conversation) are written
// back as they were, so that every message sends and saves the same. The
// two kinds alternate, each timed alone, and the medians are reported:
// cold-extra-µs is what a cold read costs a message.
func BenchmarkHandleCold(b *testing.B) {
	a, mem := toolRoundAssistant(b)
	ctx := context.Background()
	stored := fillPerson(b, a, mem)
	message := func(cached bool) time.Duration {
		rec, err := mem.Store().Get(ctx, conversation.Conversations, erin)
		if err == nil {
			_, err = mem.Store().Put(ctx, conversation.Conversations, conversation.Record{Key: erin, Data: stored, Version: rec.Version}, 0)
		}
		if err == nil && cached {
			_, err = mem.History(ctx, erin)
		}
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "find me a chicken dinner recipe"}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var cached, cold []time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			cached = append(cached, message(true))
			cold = append(cold, message(false))
		} else {
			cold = append(cold, message(false))
			cached = append(cached, message(true))
		}
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	mc, mo := median(cached), median(cold)
	b.ReportMetric(float64(mc.Microseconds())/1e3, "cached-ms")
	b.ReportMetric(float64(mo.Microseconds())/1e3, "cold-ms")
	b.ReportMetric(float64((mo - mc).Microseconds()), "cold-extra-µs")
}

// toolRoundAssistant returns an assistant over a memstore whose fake API
// answers each message with one call of the search tool, its input about
// 1.2 kB, and then a short reply.
func toolRoundAssistant(b *testing.B) (*assistant.Assistant, *conversation.Memory) {
	srv := anthropictest.NewServer(b)
	query := strings.Repeat("chicken thighs lemons garlic thyme ", 26)
	var requests atomic.Int64
	srv.Respond(func(anthropictest.Request) anthropictest.Response {
		r := anthropictest.Text("Here is lemon chicken: 30 minutes, and the ingredients are on the list.")
		if requests.Add(1)%2 == 1 {
			r = anthropictest.ToolUse("Let me look.", anthropictest.Call{Name: "search", Input: map[string]string{"query": query}})
		}
		r.Usage = &anthropictest.Usage{InputTokens: 1, OutputTokens: 1}
		return r
	})
	mem, err := conversation.New(memstore.New(), nil)
	if err != nil {
		b.Fatal(err)
	}
	reg, _ := assistant.NewRegistry(echoTool("search"))
	a, err := assistant.New(srv.Client(), mem, &assistant.Options{Tools: reg})
	if err != nil {
		b.Fatal(err)
	}
	return a, mem
}

// fillPerson handles 10 of a's messages from erin and returns the stored
// conversation they make.
func fillPerson(b *testing.B, a *assistant.Assistant, mem *conversation.Memory) []byte {
	b.Helper()
	ctx := context.Background()
	for range 10 {
		if _, err := a.Handle(ctx, assistant.Inbound{From: erin, Text: "find me a chicken dinner recipe"}); err != nil {
			b.Fatal(err)
		}
	}
	rec, err := mem.Store().Get(ctx, conversation.Conversations, erin)
	if err != nil {
		b.Fatal(err)
	}
	if n := len(rec.Data); n < 25_000 || n > 30_000 {
		b.Fatalf("the stored conversation is %d bytes, want about 27 kB", n)
	}
	return rec.Data
}
