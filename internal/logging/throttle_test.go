package logging_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/internal/logging"
	"github.com/mombot/mombot/internal/logtest"
)

// Each message is written once an interval, the rest counted: 100
// refusals of two kinds make two records each, the count written when the
// interval ends, without another record to bring it; the next refusal
// after that is written whole again.
func TestThrottle(t *testing.T) {
	var buf logtest.Buffer
	th := logging.NewThrottle(logging.New(&buf, &logging.Options{Format: logging.Text}), 100*time.Millisecond)
	for range 50 {
		th.Log(context.Background(), slog.LevelWarn, "refused: no signature", "remote", "192.0.2.1:1234")
		th.Log(context.Background(), slog.LevelInfo, "refused: no CSRF token", "path", "/lists")
	}
	if got := buf.String(); strings.Count(got, "\n") != 2 || !strings.Contains(got, `level=WARN msg="refused: no signature" remote=192.0.2.1:1234`) ||
		!strings.Contains(got, `level=INFO msg="refused: no CSRF token" path=/lists`) {
		t.Fatalf("during the interval:\n%s", got)
	}
	for deadline := time.Now().Add(10 * time.Second); strings.Count(buf.String(), "repeated=49") < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("no counts after the interval:\n%s", buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := buf.String(); !strings.Contains(got, `level=WARN msg="refused: no signature" repeated=49 within=100ms`) {
		t.Errorf("the count is not at the message's level with the interval:\n%s", got)
	}
	th.Log(context.Background(), slog.LevelWarn, "refused: no signature", "remote", "192.0.2.2:1")
	th.Log(context.Background(), slog.LevelWarn, "refused: no signature", "remote", "192.0.2.3:1")
	th.Close()
	got := buf.String()
	if !strings.Contains(got, "remote=192.0.2.2:1") || strings.Contains(got, "remote=192.0.2.3:1") || !strings.Contains(got, "repeated=1 within") {
		t.Errorf("after the interval: the first whole, the second counted and written at Close:\n%s", got)
	}
	th.Close()
	if n := strings.Count(buf.String(), "\n"); n != 6 {
		t.Errorf("%d records in all, want 6:\n%s", n, buf.String())
	}
}
