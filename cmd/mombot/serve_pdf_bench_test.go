package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
)

// benchPDF returns a 19 MB PDF whose 101 page objects, one over the
// limit, come at its end, so that the page count reads the whole file
// before it refuses it: after the header, random bytes, or, when crafted,
// "/Type" and 1,000 spaces repeated (the input that made a regular
// expression slow).
func benchPDF(crafted bool) []byte {
	const size = 19_000_000
	var pages bytes.Buffer
	for i := range 101 {
		fmt.Fprintf(&pages, "%d 0 obj << /Type /Page /Parent 2 0 R >> endobj\n", 100+i)
	}
	b := make([]byte, 0, size)
	b = append(b, "%PDF-1.4\n"...)
	fill := size - len(b) - pages.Len()
	if crafted {
		unit := []byte("/Type" + string(bytes.Repeat([]byte{' '}, 1000)))
		for len(b)+len(unit) <= 9+fill {
			b = append(b, unit...)
		}
		b = append(b, bytes.Repeat([]byte{' '}, 9+fill-len(b))...)
	} else {
		r := rand.New(rand.NewPCG(1, 2))
		for range fill {
			b = append(b, byte(r.Uint32()))
		}
	}
	return append(b, pages.Bytes()...)
}

// BenchmarkServePDF measures the whole answer of mombot serve, as a
// process, to a 19 MB PDF of too many pages: from the signed webhook to
// the reply ("too big for me") at the fake Graph API, the download of the
// file included. Each iteration sends the random file and the crafted
// one, in turn first, and the benchmark reports the time of each answer
// and their ratio (crafted/random):
//
//	go test -run '^$' -bench ServePDF -benchtime 6x -count 2 ./cmd/mombot
func BenchmarkServePDF(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: the benchmark builds and runs mombot serve")
	}
	f := newServeFixture(b, "file:"+filepath.Join(b.TempDir(), "conversations.json"), map[string]string{erin: "Erin"})
	f.graph.AddMedia("pdf-random", benchPDF(false), "application/pdf")
	f.graph.AddMedia("pdf-crafted", benchPDF(true), "application/pdf")
	p := f.start()
	answer := func(media string, n int) time.Duration {
		before := len(f.graph.Sent())
		start := time.Now()
		msg := metaMessage(erinWaID, fmt.Sprintf("wamid.pdf.%d.%s.%d", start.UnixNano(), media, n), start, map[string]any{
			"type": "document", "document": map[string]any{"filename": "book.pdf", "mime_type": "application/pdf", "sha256": "ZmFrZQ==", "id": media}})
		if code := p.deliver(msg); code != 200 {
			b.Fatalf("delivery: %d", code)
		}
		sent := waitSent(b, f.graph, before+1, time.Minute)
		took := time.Since(start)
		if got := sent[len(sent)-1].Body; got != apology.DocumentLarge {
			b.Fatalf("the reply to %s: %q, want %q", media, got, apology.DocumentLarge)
		}
		return took
	}
	var random, crafted time.Duration
	n := 0
	for b.Loop() {
		n++
		// The first answer of a pair is the slower (measured: by 2-3x),
		// so the order alternates.
		if n%2 == 1 {
			random += answer("pdf-random", n)
			crafted += answer("pdf-crafted", n)
		} else {
			crafted += answer("pdf-crafted", n)
			random += answer("pdf-random", n)
		}
	}
	b.StopTimer()
	p.stop()
	b.ReportMetric(random.Seconds()/float64(n), "random-s")
	b.ReportMetric(crafted.Seconds()/float64(n), "crafted-s")
	b.ReportMetric(crafted.Seconds()/random.Seconds(), "crafted/random")
	b.ReportMetric(0, "ns/op")
}
