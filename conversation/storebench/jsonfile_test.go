package storebench_test

import (
	"bytes"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/internal/atomicfile"
)

// jsonSizes are the JSON file's populations, from a family up: every save
// rewrites the whole file, so 100,000 people (a 3 GB file) only run when
// MOMBOT_BENCH_HUGE is set.
func jsonSizes() []int {
	if os.Getenv("MOMBOT_BENCH_HUGE") != "" {
		return []int{5, 100, 1000, 100_000}
	}
	return []int{5, 100, 1000}
}

// jsonFile is one populated conversations file and its floors' files.
type jsonFile struct {
	mem      *conversation.Memory
	path     string  // the conversations file
	size     int64   // of the conversations file when opened
	heap     float64 // heap the open store holds, over size
	floorR   *os.File
	floorW   string // the file the write floor replaces
	convLen  int
	readable int // conversations in floorR
}

// jsonFileFor writes a file of people conversations, each a copy of one
// saved through the store, and opens it.
func jsonFileFor(b *testing.B, people int) *jsonFile {
	b.Helper()
	dir := b.TempDir()
	path := filepath.Join(dir, "conversations.json")
	s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet, WarnSize: -1})
	if err != nil {
		b.Fatal(err)
	}
	mem, err := conversation.New(s, &conversation.Options{Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	fill(b, mem, phone(0))
	s.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	head := []byte("{\n  " + strconv.Quote(phone(0)) + ": ")
	if !bytes.HasPrefix(data, head) || !bytes.HasSuffix(data, []byte("\n}\n")) {
		b.Fatalf("unexpected file layout: %.80s", data)
	}
	entry := data[len(head) : len(data)-3]
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bytes.NewBuffer(make([]byte, 0, 1<<20))
	w.WriteString("{\n")
	for p := range people {
		if p > 0 {
			w.WriteString(",\n")
		}
		fmt.Fprintf(w, "  %q: ", phone(p))
		w.Write(entry)
		if w.Len() > 1<<20 {
			f.Write(w.Bytes())
			w.Reset()
		}
	}
	w.WriteString("\n}\n")
	f.Write(w.Bytes())
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	s, err = jsonfile.Open(path, &jsonfile.Options{Logger: quiet, WarnSize: -1})
	if err != nil {
		b.Fatal(err)
	}
	opened := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.Cleanup(func() { s.Close() })
	heap := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(fi.Size())
	b.Logf("jsonfile: %d people, %d MB file, opened in %v, heap %.2fx the file", people, fi.Size()>>20, opened.Round(time.Millisecond), heap)
	if mem, err = conversation.New(s, &conversation.Options{Now: clock}); err != nil {
		b.Fatal(err)
	}

	all, _ := conversationBytes(b)
	readable := min(people, floorKeys)
	if err := os.WriteFile(filepath.Join(dir, "floor-read"), bytes.Repeat(all, readable), 0o600); err != nil {
		b.Fatal(err)
	}
	fr, err := os.Open(filepath.Join(dir, "floor-read"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fr.Close() })
	return &jsonFile{mem: mem, path: path, size: fi.Size(), heap: heap, floorR: fr, floorW: filepath.Join(dir, "floor.json"),
		convLen: len(all), readable: readable}
}

// BenchmarkJSONFile measures the JSON file store against the floors of a
// store that keeps its records in one file: for History, a read of a whole
// conversation's bytes from the page cache; for SaveTurn, one atomic write
// of the file's bytes (package atomicfile: a temporary file in the same
// folder, fsync, rename, fsync of the folder), which every save must make.
// It also reports the heap the open store holds, as a multiple of the
// file's size.
func BenchmarkJSONFile(b *testing.B) {
	for _, people := range jsonSizes() {
		b.Run(fmt.Sprintf("people=%d/op=History", people), func(b *testing.B) {
			d := jsonFileFor(b, people)
			measure(b, func() {
				h, err := d.mem.History(ctx(), phone(mrand.IntN(people)))
				checkHistory(b, h, err)
			}, func() {
				buf := make([]byte, d.convLen)
				if _, err := d.floorR.ReadAt(buf, int64(mrand.IntN(d.readable)*d.convLen)); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportMetric(d.heap, "heap-x-file")
			b.ReportMetric(float64(d.size)/1e6, "file-MB")
		})
		b.Run(fmt.Sprintf("people=%d/op=SaveTurn", people), func(b *testing.B) {
			d := jsonFileFor(b, people)
			file, err := os.ReadFile(d.path) // the file as a save writes it: its size does not change
			if err != nil {
				b.Fatal(err)
			}
			var turn []conversation.Message
			measurePrepared(b, func() { turn = nextTurn() }, func() {
				if err := d.mem.SaveTurn(ctx(), phone(mrand.IntN(people)), turn); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if err := atomicfile.Write(d.floorW, func(w io.Writer) error { _, err := w.Write(file); return err }); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
