package assistant

import (
	"net/http"
	"testing"
	"time"
)

// retryAfter reads the headers the way the SDK does, so that the cap is
// applied to the wait the SDK would make.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 2, 24, 18, 35, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		ok     bool
	}{
		{"none", http.Header{}, 0, false},
		{"seconds", http.Header{"Retry-After": {"20"}}, 20 * time.Second, true},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{"milliseconds win", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"20"}}, 250 * time.Millisecond, true},
		{"bad milliseconds fall back to seconds", http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"3"}}, 3 * time.Second, true},
		{"HTTP date", http.Header{"Retry-After": {now.Add(time.Minute).Format(http.TimeFormat)}}, time.Minute, true},
		{"garbage", http.Header{"Retry-After": {"later"}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryAfter(tt.header, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("retryAfter = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// FuzzRetryAfter: any header value is read without a panic.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"20", "1.5", "-3", "1e400", "NaN", "Tue, 24 Feb 2026 18:36:00 GMT", ""} {
		f.Add(s, s)
	}
	now := time.Date(2026, 2, 24, 18, 35, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ms, s string) {
		retryAfter(http.Header{"Retry-After-Ms": {ms}, "Retry-After": {s}}, now)
	})
}
