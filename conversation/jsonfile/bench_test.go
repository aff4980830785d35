package jsonfile_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storetest"
)

// benchTurn is a turn with one tool round: about 1.5 kB as indented in the
// file (0.9 kB compact), so a full 10-turn conversation is about 15 kB.
func benchTurn(i int) []conversation.Message {
	return storetest.ToolTurn(
		fmt.Sprintf("[Mon 24 Feb 10:%02d] [From Erin]: find me a chicken dinner recipe for tonight, nothing spicy", i%60),
		fmt.Sprintf("toolu_%024d", i),
		"Found 5 recipes: 1. Lemon herb chicken (35 min) 2. Chicken tacos (25 min) 3. Sheet pan chicken fajitas (30 min) 4. Chicken piccata (30 min) 5. Chicken and rice soup (45 min)",
		"Here are 5 chicken dinner recipes:\n1. Lemon herb chicken\n2. Chicken tacos\n3. Sheet pan fajitas\n4. Chicken piccata\n5. Chicken and rice soup\nWant details on one?")
}

// textTurn is a turn of a user text and a text reply, about 0.2 kB as
// stored: the turns of the SQLite and Redis benchmarks, for comparing the
// stores on the same data.
func textTurn(i int) []conversation.Message {
	return storetest.TextTurn(fmt.Sprintf("question %d: what should we cook tonight?", i),
		fmt.Sprintf("answer %d: lemon chicken with rice takes about 30 minutes.", i))
}

// turnKind is the shape of the turns a benchmark's file holds.
type turnKind struct {
	name     string
	turn     func(i int) []conversation.Message
	messages int // per turn
	sizes    []int
}

// hugeSizes adds 100,000 phones of tool turns, a file of about 1.5 GB that
// takes several GB of memory and seconds per save, when
// MOMBOT_BENCH_HUGE is set.
func hugeSizes() []int {
	if os.Getenv("MOMBOT_BENCH_HUGE") != "" {
		return []int{100_000}
	}
	return nil
}

var (
	toolTurns = turnKind{"tool", benchTurn, 4, append([]int{2, 100, 1000, 10_000}, hugeSizes()...)}
	textTurns = turnKind{"text", textTurn, 2, []int{100, 10_000, 100_000}}
)

// writeFixture writes a file of phones conversations of 10 turns each,
// last active at at.
func writeFixture(b *testing.B, path string, kind turnKind, phones int, at time.Time) {
	b.Helper()
	type conv struct {
		LastActive string              `json:"last_active"`
		Turns      []conversation.Turn `json:"turns"`
	}
	turns := make([]conversation.Turn, 10)
	for i := range turns {
		turns[i] = conversation.Turn{Messages: kind.turn(i)}
	}
	file := make(map[string]conv, phones)
	for p := range phones {
		file[benchPhone(p)] = conv{LastActive: at.Format("2006-01-02T15:04:05"), Turns: turns}
	}
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
}

func benchPhone(i int) string { return fmt.Sprintf("+1555%07d", i) }

func benchMemory(b *testing.B, kind turnKind, phones int) (*conversation.Memory, string) {
	path := filepath.Join(b.TempDir(), "conversations.json")
	at := time.Now().Truncate(time.Second)
	writeFixture(b, path, kind, phones, at)
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet, WarnSize: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	mem, _ := conversation.New(s, &conversation.Options{Now: func() time.Time { return at }})
	return mem, path
}

// BenchmarkHistory reads a random phone's 10-turn conversation: served from
// memory after one stat(2) that notices writes by other processes, so it
// costs the same at any size of file.
func BenchmarkHistory(b *testing.B) {
	for _, kind := range []turnKind{toolTurns, textTurns} {
		for _, phones := range kind.sizes {
			b.Run(fmt.Sprintf("turns=%s/phones=%d", kind.name, phones), func(b *testing.B) {
				mem, _ := benchMemory(b, kind, phones)
				b.ReportAllocs()
				for b.Loop() {
					h, err := mem.History(ctx, benchPhone(rand.IntN(phones)))
					if err != nil || len(h) != 10*kind.messages {
						b.Fatalf("History = %d messages, %v", len(h), err)
					}
				}
			})
		}
	}
}

// BenchmarkSaveTurn saves one turn for a random phone of a file of
// conversations of 10 turns: each save rewrites and fsyncs the whole file.
// The cap drops the oldest turn, so the file keeps its size.
func BenchmarkSaveTurn(b *testing.B) {
	for _, kind := range []turnKind{toolTurns, textTurns} {
		for _, phones := range kind.sizes {
			b.Run(fmt.Sprintf("turns=%s/phones=%d", kind.name, phones), func(b *testing.B) {
				mem, path := benchMemory(b, kind, phones)
				i := 100 // fresh tool ids: the fixture uses 0-9
				b.ReportAllocs()
				for b.Loop() {
					i++
					if err := mem.SaveTurn(ctx, benchPhone(rand.IntN(phones)), kind.turn(i)); err != nil {
						b.Fatal(err)
					}
				}
				fi, _ := os.Stat(path)
				b.ReportMetric(float64(fi.Size())/1e6, "file-MB")
			})
		}
	}
}
