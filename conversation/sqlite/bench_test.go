package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
	"github.com/mombot/mombot/conversation/storetest"
)

// benchSizes are the numbers of phones, each with a full conversation of
// benchTurns turns, that the benchmarks run against.
var benchSizes = []int{100, 10_000, 100_000}

const benchTurns = conversation.DefaultMaxTurns

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// Populated databases are kept for the whole run, so that -count and the
// two benchmarks pay for populating each size once. The benchmarks leave
// every conversation at benchTurns turns, so a database stays the same size.
var (
	benchMu  sync.Mutex
	benchDir string
	benchDBs = map[int]string{}
)

// benchDB returns the path of a database of phones conversations, last
// active at storetest.Start.
func benchDB(b *testing.B, phones int) string {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if path, ok := benchDBs[phones]; ok {
		return path
	}
	if benchDir == "" {
		dir, err := os.MkdirTemp("", "mombot-sqlite-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
	}
	path := filepath.Join(benchDir, fmt.Sprintf("%d.db", phones))
	s, err := sqlite.Open(path, nil) // the schema, in WAL mode
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	start := time.Now()
	db := rawDBTB(b, path)
	populate(b, db, phones, benchTurns, storetest.Start)
	db.Close()
	b.Logf("populated %d phones x %d turns in %v", phones, benchTurns, time.Since(start).Round(time.Millisecond))
	benchDBs[phones] = path
	return path
}

// benchMemory opens the database of phones conversations behind a Memory
// whose clock stands a minute after their last activity.
func benchMemory(b *testing.B, phones int) *conversation.Memory {
	b.Helper()
	s, err := sqlite.Open(benchDB(b, phones), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	now := storetest.Start.Add(time.Minute)
	mem, err := conversation.New(s, &conversation.Options{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	return mem
}

// BenchmarkSaveTurn saves one text turn for a random phone of a full
// conversation: one durable transaction that adds a row and drops the
// oldest.
func BenchmarkSaveTurn(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("phones=%d", n), func(b *testing.B) {
			mem := benchMemory(b, n)
			ctx := context.Background()
			msgs := storetest.TextTurn("what should we cook tonight?", "Lemon chicken with rice: about 30 minutes.")
			for b.Loop() {
				if err := mem.SaveTurn(ctx, benchPhone(rand.IntN(n)), msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHistory loads the history of a random phone: 10 turns, 20
// messages.
func BenchmarkHistory(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("phones=%d", n), func(b *testing.B) {
			mem := benchMemory(b, n)
			ctx := context.Background()
			for b.Loop() {
				h, err := mem.History(ctx, benchPhone(rand.IntN(n)))
				if err != nil {
					b.Fatal(err)
				}
				if len(h) != 2*benchTurns {
					b.Fatalf("history of %d messages, want %d", len(h), 2*benchTurns)
				}
			}
		})
	}
}

// BenchmarkReadOnlyLoad loads a random phone's conversation from a store
// opened with Options.ReadOnly and, in the same iteration, from a writable
// store, so that both see the same load on the machine; it reports the
// read-only load's time and its ratio to the writable one's. With a writer
// running, the read-only store opens a connection that reads through the
// -wal for each load; with none, it keeps its immutable connections (see
// readonly.go). The writable store of "no writer" is on a copy of the
// database, so that the read-only store sees no -wal.
func BenchmarkReadOnlyLoad(b *testing.B) {
	const n = 10_000
	path := benchDB(b, n)
	for _, tt := range []struct {
		name   string
		rwPath func(b *testing.B) string
	}{
		{"writer running", func(*testing.B) string { return path }},
		{"no writer", func(b *testing.B) string {
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			cp := filepath.Join(b.TempDir(), "copy.db")
			if err := os.WriteFile(cp, data, 0o600); err != nil {
				b.Fatal(err)
			}
			return cp
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			ctx := context.Background()
			rw, err := sqlite.Open(tt.rwPath(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer rw.Close()
			ro, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			defer ro.Close()
			var roTime, rwTime time.Duration
			loads := 0
			for b.Loop() {
				phone := benchPhone(rand.IntN(n))
				start := time.Now()
				if _, err := ro.Load(ctx, phone); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if _, err := rw.Load(ctx, phone); err != nil {
					b.Fatal(err)
				}
				roTime += mid.Sub(start)
				rwTime += time.Since(mid)
				loads++
			}
			b.ReportMetric(float64(roTime.Nanoseconds())/float64(loads), "ns/read-only-load")
			b.ReportMetric(float64(roTime)/float64(rwTime), "x-writable")
		})
	}
}
