package jsonfile_test

import (
	"encoding/json"
	"fmt"
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

// writeFixture writes a file of phones conversations of 10 turns each,
// last active at at.
func writeFixture(b *testing.B, path string, phones int, at time.Time) {
	b.Helper()
	type conv struct {
		LastActive string              `json:"last_active"`
		Turns      []conversation.Turn `json:"turns"`
	}
	turns := make([]conversation.Turn, 10)
	for i := range turns {
		turns[i] = conversation.Turn{Messages: benchTurn(i)}
	}
	file := make(map[string]conv, phones)
	for p := range phones {
		file[fmt.Sprintf("+1555%07d", p)] = conv{LastActive: at.Format("2006-01-02T15:04:05"), Turns: turns}
	}
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
}

func benchMemory(b *testing.B, phones int) (*conversation.Memory, string) {
	path := filepath.Join(b.TempDir(), "conversations.json")
	at := time.Now().Truncate(time.Second)
	writeFixture(b, path, phones, at)
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet, WarnSize: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	mem, _ := conversation.New(s, &conversation.Options{Now: func() time.Time { return at }})
	return mem, path
}

// BenchmarkHistory reads a 10-turn conversation: served from memory after
// one stat(2) that notices writes by other processes.
func BenchmarkHistory(b *testing.B) {
	mem, _ := benchMemory(b, 2)
	b.ReportAllocs()
	for b.Loop() {
		h, err := mem.History(ctx, "+15550000001")
		if err != nil || len(h) != 40 {
			b.Fatalf("History = %d messages, %v", len(h), err)
		}
	}
}

// BenchmarkSaveTurn saves one turn into a file of 2, 1,000 and 10,000
// conversations of 10 turns: each save rewrites and fsyncs the whole file.
func BenchmarkSaveTurn(b *testing.B) {
	for _, phones := range []int{2, 1000, 10000} {
		b.Run(fmt.Sprintf("phones=%d", phones), func(b *testing.B) {
			mem, path := benchMemory(b, phones)
			i := 100 // fresh tool ids: the fixture uses 0-9
			b.ReportAllocs()
			for b.Loop() {
				i++
				if err := mem.SaveTurn(ctx, "+15550000001", benchTurn(i)); err != nil {
					b.Fatal(err)
				}
			}
			fi, _ := os.Stat(path)
			b.ReportMetric(float64(fi.Size())/1e6, "file-MB")
		})
	}
}
