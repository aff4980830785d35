package logtest_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/mombot/mombot/internal/logtest"
)

// Loggers on many goroutines write whole lines while the test reads: run
// with -race, no write is lost and no read races a write.
func TestBufferConcurrent(t *testing.T) {
	var b logtest.Buffer
	log := slog.New(slog.NewTextHandler(&b, nil))
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				log.Info("line", "writer", w, "i", i)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != writers*each {
		t.Fatalf("%d lines, want %d", len(lines), writers*each)
	}
	for _, l := range lines {
		if !strings.Contains(l, "msg=line writer=") {
			t.Fatalf("a line was torn: %q", l)
		}
	}
}
