package storebench_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/conversation/storetest"
)

// turns is the length of every benchmarked conversation: the default cap,
// so each save drops the oldest turn and a conversation keeps its size.
const turns = conversation.DefaultMaxTurns

// sizes are the populations of the SQLite and Redis benchmarks, each person
// holding a full conversation of tool turns (about 30 kB).
var sizes = []int{100, 100_000}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func ctx() context.Context { return context.Background() }

// now is every benchmark's clock: a minute after storetest.Start, when
// every populated conversation was last active.
var now = storetest.Start.Add(time.Minute)

func clock() time.Time { return now }

func phone(i int) string { return fmt.Sprintf("+1555%07d", i) }

// toolIDs numbers the tool calls of saved turns, so that no saved turn
// reuses an id of the nine it joins.
var toolIDs atomic.Int64

func init() { toolIDs.Store(1_000) }

// toolTurn returns turn i of a conversation: about 3 kB as stored, of a
// user text, an assistant text and tool_use, its tool_result (a search's
// listing, the bulk of it) and the final text reply.
func toolTurn(i int64) []conversation.Message {
	id := fmt.Sprintf("toolu_01%022d", i)
	user := fmt.Sprintf("[Mon 24 Feb 10:%02d] [From Erin]: we have chicken thighs, a lemon, half a bag of spinach and some feta; "+
		"find me a dinner recipe for four that takes under 40 minutes, nothing spicy, and tell me what else to buy", i%60)
	var listing strings.Builder
	for r := range 8 {
		fmt.Fprintf(&listing, "%d. Lemon herb chicken thighs with spinach and feta, variation %d (%d min, serves 4). "+
			"Ingredients: chicken thighs, lemon, garlic, olive oil, baby spinach, feta, oregano, salt, pepper. "+
			"Rating 4.%d from %d reviews. https://recipes.example.com/r/%06d\n", r+1, r, 25+r, r, 100+r*37, int(i)*10+r)
	}
	reply := "Here are two that fit what you have:\n1. Lemon herb chicken thighs with spinach and feta: 35 minutes, " +
		"one pan. You need garlic and oregano.\n2. Greek chicken skillet: 30 minutes. You need garlic, oregano and " +
		"a red onion.\nShall I add garlic, oregano and a red onion to the grocery list?"
	return []conversation.Message{
		conversation.UserText(user),
		conversation.NewMessage(conversation.RoleAssistant,
			conversation.TextBlock("Let me look for recipes with what you have."),
			[]byte(fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"search_recipes","input":{"query":"chicken thighs lemon spinach feta","max_minutes":40,"servings":4,"exclude":["spicy"]}}`, id))),
		conversation.NewMessage(conversation.RoleUser,
			[]byte(fmt.Sprintf(`{"type":"tool_result","tool_use_id":%q,"content":%s}`, id, quoteJSON(listing.String())))),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock(reply)),
	}
}

func quoteJSON(s string) string {
	b, _ := conversation.UserText(s).MarshalJSON()
	// {"role":"user","content":"..."}
	return strings.TrimSuffix(strings.TrimPrefix(string(b), `{"role":"user","content":`), "}")
}

// nextTurn returns a turn with a tool id no conversation holds yet.
func nextTurn() []conversation.Message { return toolTurn(toolIDs.Add(1)) }

// fill saves the 10 turns of the benchmark conversation for p through mem,
// as a person's messages would be saved.
func fill(tb testing.TB, mem *conversation.Memory, p string) {
	tb.Helper()
	for i := range turns {
		if err := mem.SaveTurn(ctx(), p, toolTurn(int64(i))); err != nil {
			tb.Fatal(err)
		}
	}
}

// conversationBytes returns the stored form of the benchmark conversation
// (its turns as Turn.MarshalJSON writes them) and of one turn: the bytes
// the floors read and write.
func conversationBytes(tb testing.TB) (all, one []byte) {
	tb.Helper()
	for i := range turns {
		b, err := conversation.Turn{Messages: toolTurn(int64(i))}.MarshalJSON()
		if err != nil {
			tb.Fatal(err)
		}
		all = append(all, b...)
		if i == 0 {
			one = b
		}
	}
	return all, one
}

// measure runs op and floor alternately, each on a person of its own
// choosing, and reports the median of each and the ratio of the medians.
// Medians, and the alternation, keep a burst of load on the shared
// machine from landing on one side only.
func measure(b *testing.B, op, floor func()) { measurePrepared(b, nil, op, floor) }

// measurePrepared is measure with prepare run, untimed, before each op.
func measurePrepared(b *testing.B, prepare, op, floor func()) {
	b.Helper()
	var ops, floors []time.Duration
	first := true
	timed := func(f func()) time.Duration {
		t := time.Now()
		f()
		return time.Since(t)
	}
	for b.Loop() {
		if prepare != nil {
			prepare()
		}
		if first {
			ops = append(ops, timed(op))
			floors = append(floors, timed(floor))
		} else {
			floors = append(floors, timed(floor))
			ops = append(ops, timed(op))
		}
		first = !first
	}
	mo, mf := median(ops), median(floors)
	b.ReportMetric(float64(mo.Nanoseconds())/1e3, "store-µs")
	b.ReportMetric(float64(mf.Nanoseconds())/1e3, "floor-µs")
	b.ReportMetric(float64(mo)/float64(mf), "x-floor")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// historyOf fails the benchmark unless h is a full conversation.
func checkHistory(b *testing.B, h []conversation.Message, err error) {
	if err != nil || len(h) != 4*turns {
		b.Fatalf("History = %d messages, %v; want %d", len(h), err, 4*turns)
	}
}

// Resources that the benchmarks of a run share and TestMain releases.
var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

func atExit(f func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range slices.Backward(cleanups) {
		f()
	}
	os.Exit(code)
}

func randomText() string { return strings.ToLower(rand.Text()[:12]) }

// filledMemstore returns a memstore, and a Memory on it, that hold the
// benchmark conversation for each of people.
func filledMemstore(b *testing.B, people int) (*memstore.Store, *conversation.Memory) {
	s := memstore.New()
	mem, err := conversation.New(s, &conversation.Options{Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	for p := range people {
		fill(b, mem, phone(p))
	}
	return s, mem
}

// BenchmarkMemstore measures the in-memory store, against a copy of the
// same bytes.
func BenchmarkMemstore(b *testing.B) {
	const people = 100
	_, mem := filledMemstore(b, people)
	all, one := conversationBytes(b)
	var sink []byte
	b.Run(fmt.Sprintf("people=%d/op=History", people), func(b *testing.B) {
		measure(b, func() {
			h, err := mem.History(ctx(), phone(mrand.IntN(people)))
			checkHistory(b, h, err)
		}, func() { sink = slices.Clone(all) })
	})
	b.Run(fmt.Sprintf("people=%d/op=SaveTurn", people), func(b *testing.B) {
		var turn []conversation.Message
		measurePrepared(b, func() { turn = nextTurn() }, func() {
			if err := mem.SaveTurn(ctx(), phone(mrand.IntN(people)), turn); err != nil {
				b.Fatal(err)
			}
		}, func() { sink = slices.Clone(one) })
	})
	_ = sink
}

// BenchmarkColdDecode measures what a cold History adds to any store's Get:
// a memstore History of a conversation this Memory has not read (the
// people outnumber its read cache, and are read in turn), against the
// least any reader of the record must do, one encoding/json/v2 Unmarshal
// of the same stored bytes into its turns' roles and raw contents, with no
// check of what they hold.
func BenchmarkColdDecode(b *testing.B) {
	const people = 3000
	s, mem := filledMemstore(b, people)
	rec, err := s.Get(ctx(), conversation.Conversations, phone(0))
	if err != nil {
		b.Fatal(err)
	}
	next := 0
	b.Run(fmt.Sprintf("people=%d/op=History", people), func(b *testing.B) {
		measure(b, func() {
			next = (next + 1) % people
			h, err := mem.History(ctx(), phone(next))
			checkHistory(b, h, err)
		}, func() {
			var c struct {
				LastActive string `json:"last_active"`
				Turns      []struct {
					Messages []struct {
						Role    string         `json:"role"`
						Content jsontext.Value `json:"content"`
					} `json:"messages"`
				} `json:"turns"`
			}
			if err := jsonv2.Unmarshal(rec.Data, &c); err != nil || len(c.Turns) != turns {
				b.Fatalf("decoded %d turns, %v", len(c.Turns), err)
			}
		})
	})
}
