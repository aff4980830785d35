package jsonfile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/internal/atomicfile"
)

// BenchmarkAddUsage measures recording one message's usage in a ledger that
// holds a family of 5 over 30 days, a year and 3 years, each day of each
// person used. "floor" is an atomic, fsynced write of a file of the same
// size, which every addition makes; the ratio between the two is what
// reading, adding and rendering the ledger costs.
func BenchmarkAddUsage(b *testing.B) {
	const phones = 5
	u := conversation.Usage{Messages: 1, Calls: 2, InputTokens: 120, CacheWrite5mTokens: 800, CacheReadTokens: 3000, OutputTokens: 250}
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, days := range []int{30, 365, 3 * 365} {
		path := filepath.Join(b.TempDir(), "conversations.json")
		var fixture strings.Builder
		fixture.WriteString(`{"usage": {`)
		for p := range phones {
			if p > 0 {
				fixture.WriteString(",")
			}
			fmt.Fprintf(&fixture, "%q: {", fmt.Sprintf("+1415555%04d", p))
			for d := range days {
				if d > 0 {
					fixture.WriteString(",")
				}
				fmt.Fprintf(&fixture, `"%s": {"messages": 12, "api_calls": 20, "input_tokens": 1500, "cache_write_5m_tokens": 9000, "cache_write_1h_tokens": 2000, "cache_read_tokens": 40000, "output_tokens": 3000}`,
					start.AddDate(0, 0, d).Format(conversation.UsageDayLayout))
			}
			fixture.WriteString("}")
		}
		fixture.WriteString("}}")
		if err := os.WriteFile(jsonfile.UsagePath(path), []byte(fixture.String()), 0o600); err != nil {
			b.Fatal(err)
		}
		s, err := jsonfile.Open(path, &jsonfile.Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		// One addition rewrites the fixture the way the store writes it.
		if err := s.AddUsage(ctx, "+14155550000", start, u); err != nil {
			b.Fatal(err)
		}
		data, err := os.ReadFile(jsonfile.UsagePath(path))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("days=%d/add", days), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if err := s.AddUsage(ctx, fmt.Sprintf("+1415555%04d", i%phones), start.AddDate(0, 0, days-1), u); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "file-bytes")
		})
		b.Run(fmt.Sprintf("days=%d/floor", days), func(b *testing.B) {
			floor := filepath.Join(b.TempDir(), "floor.json")
			for b.Loop() {
				if err := atomicfile.WriteFile(floor, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		s.Close()
	}
}
