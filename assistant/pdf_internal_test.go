package assistant

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
)

// pageRE is the reference pdfPages is checked against: the same rule as
// a regular expression, whose matches are then filtered by the byte after
// them (RE2 has no look-ahead, and consuming that byte would hide a
// "/Type" right after it).
var pageRE = regexp.MustCompile(`/Type[\x00\t\n\f\r ]*/Page`)

func referencePages(data []byte, limit int) int {
	n := 0
	for _, m := range pageRE.FindAllIndex(data, -1) {
		if m[1] == len(data) || strings.IndexByte("()<>[]{}/%\x00\t\n\f\r ", data[m[1]]) >= 0 {
			n++
		}
	}
	return min(n, limit)
}

func TestPDFPages(t *testing.T) {
	spaces := strings.Repeat(" ", 1000)
	tests := []struct {
		name string
		data string
		want int
	}{
		{"none", "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj", 0},
		{"one page", "<< /Type /Page /Parent 2 0 R >>", 1},
		{"no space before the name", "<</Type/Page/Parent 2 0 R>>", 1},
		{"white space of every kind", "/Type\x00\t\n\f\r /Page\n", 1},
		{"the page tree is not a page", "<< /Type /Pages /Kids [3 0 R] >>", 0},
		{"a longer name is not a page", "/Type /PageLabel ", 0},
		{"a page at the very end", "/Type /Page", 1},
		{"pages side by side", "/Type /Page/Type /Page/Type/Page>>", 3},
		{"a page after a /Type that names nothing", "/Type /Type /Page ", 1},
		{"the crafted input: /Type and 1,000 spaces, repeated", strings.Repeat("/Type"+spaces, 50), 0},
		{"the crafted input with a page at the end", strings.Repeat("/Type"+spaces, 50) + "/Page", 1},
		{"a comment or a string ends the name", "/Type /Page% page\n/Type /Page(x)", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pdfPages([]byte(tt.data), 100); got != tt.want {
				t.Errorf("pdfPages = %d, want %d", got, tt.want)
			}
			if ref := referencePages([]byte(tt.data), 100); ref != tt.want {
				t.Errorf("the reference counts %d, want %d", ref, tt.want)
			}
		})
	}
	if got := pdfPages([]byte(strings.Repeat("/Type /Page ", 500)), 101); got != 101 {
		t.Errorf("pdfPages stops at its limit: got %d, want 101", got)
	}
}

// FuzzCheckPDF checks that checkPDF never panics and refuses only with a
// document sentinel, and that pdfPages counts what the regular expression
// of the same rule counts. The seeds (below and in testdata/fuzz) run
// with every go test.
func FuzzCheckPDF(f *testing.F) {
	f.Add([]byte("%PDF-1.4\n3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n"))
	f.Add([]byte("%PDF-1.7\n<</Type/Pages/Kids[3 0 R]>>/Type\x00/Page"))
	f.Add([]byte("%PDF-1.4\n" + strings.Repeat("/Type"+strings.Repeat(" ", 1000), 20)))
	f.Add([]byte("%PDF-1.4 trailer << /Encrypt 9 0 R >>"))
	f.Add([]byte("/Type /Page"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := checkPDF(data)
		if err != nil && !errors.Is(err, apology.ErrDocumentType) && !errors.Is(err, apology.ErrDocumentTooLarge) && !errors.Is(err, apology.ErrDocumentLocked) {
			t.Fatalf("checkPDF: %v, which wraps no document sentinel", err)
		}
		for _, limit := range []int{1, 3, MaxPDFPages + 1} {
			if got, want := pdfPages(data, limit), referencePages(data, limit); got != want {
				t.Fatalf("pdfPages(limit %d) = %d, the regular expression counts %d", limit, got, want)
			}
		}
	})
}

// pdfSize is the size of the benchmark's files: the crafted file of the
// finding was 19 MB, within MaxPDFBytes.
const pdfSize = 19_000_000

// craftedPDF is a PDF header, then "/Type" and 1,000 spaces repeated to
// size bytes: no page at all, and a "/Type" every kilobyte.
func craftedPDF(size int) []byte {
	unit := "/Type" + strings.Repeat(" ", 1000)
	b := make([]byte, 0, size)
	b = append(b, "%PDF-1.4\n"...)
	for len(b)+len(unit) <= size {
		b = append(b, unit...)
	}
	return append(b, bytes.Repeat([]byte{' '}, size-len(b))...)
}

// randomPDF is a PDF header and random bytes, size bytes in all.
func randomPDF(size int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	copy(b, "%PDF-1.4\n")
	return b
}

// BenchmarkCheckPDF measures checkPDF on 19 MB of random bytes and on the
// crafted file of the same size, one after the other in each iteration,
// and reports the time of each and their ratio (crafted/random), so that
// the comparison does not depend on how busy the machine was; the
// reference regular expression is measured the same way, for comparison:
//
//	go test -run '^$' -bench CheckPDF -count 6 ./assistant/
func BenchmarkCheckPDF(b *testing.B) {
	random, crafted := randomPDF(pdfSize), craftedPDF(pdfSize)
	for _, c := range []struct {
		name  string
		count func([]byte) error
	}{
		{"scanner", checkPDF},
		{"regexp", func(data []byte) error { referencePages(data, MaxPDFPages+1); return nil }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var tr, tc time.Duration
			for b.Loop() {
				start := time.Now()
				if err := c.count(random); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if err := c.count(crafted); err != nil {
					b.Fatal(err)
				}
				tr, tc = tr+mid.Sub(start), tc+time.Since(mid)
			}
			n := float64(b.N)
			b.ReportMetric(tr.Seconds()*1e3/n, "random-ms")
			b.ReportMetric(tc.Seconds()*1e3/n, "crafted-ms")
			b.ReportMetric(tc.Seconds()/tr.Seconds(), "crafted/random")
		})
	}
}
