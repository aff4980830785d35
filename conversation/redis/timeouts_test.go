package redis

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestTimeouts: Open bounds every call with the package's timeouts and no
// retries, unless the URL sets its own.
func TestTimeouts(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tests := []struct {
		url               string
		dial, read, write time.Duration
		retries           int
	}{
		{"redis://127.0.0.1:1/0", DefaultDialTimeout, DefaultReadTimeout, DefaultWriteTimeout, 0},
		{"redis://127.0.0.1:1/0?read_timeout=5s&max_retries=0", DefaultDialTimeout, 5 * time.Second, DefaultWriteTimeout, 0},
		{"redis://127.0.0.1:1/0?max_retries=-1", DefaultDialTimeout, DefaultReadTimeout, DefaultWriteTimeout, 0},
		{"redis://127.0.0.1:1/0?dial_timeout=3s&write_timeout=4s", 3 * time.Second, DefaultReadTimeout, 4 * time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			s, err := Open(context.Background(), tt.url, &Options{Logger: quiet, AllowUnreachable: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			o := s.rdb.Options()
			if o.DialTimeout != tt.dial || o.ReadTimeout != tt.read || o.WriteTimeout != tt.write || o.MaxRetries != tt.retries || o.DialerRetries != dialAttempts {
				t.Errorf("dial %v, read %v, write %v, retries %d, dial attempts %d; want %v, %v, %v, %d, %d",
					o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries, o.DialerRetries,
					tt.dial, tt.read, tt.write, tt.retries, dialAttempts)
			}
		})
	}
}

// TestRetriesRefused: a URL that asks for retries is refused, since a
// retried write whose reply was lost may run twice (a turn stored twice).
func TestRetriesRefused(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, q := range []string{"max_retries=2", "max_retries=-2"} {
		s, err := Open(context.Background(), "redis://127.0.0.1:1/0?"+q, &Options{Logger: quiet, AllowUnreachable: true})
		if err == nil {
			s.Close()
			t.Fatalf("Open with %s succeeded, want an error", q)
		}
		if !strings.Contains(err.Error(), "max_retries") {
			t.Errorf("Open with %s: error %q does not name max_retries", q, err)
		}
	}
}
