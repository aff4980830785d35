package whatsapp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp/graphtest"
)

// sleeps records the waits of a client instead of waiting.
type sleeps struct {
	mu  sync.Mutex
	got []time.Duration
	// err, when set, is what a wait returns, as if its context ended.
	err error
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, d)
	return s.err
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.got...)
}

// testClient is a client of the fake Graph API with the default retry
// settings, whose waits are recorded rather than waited.
func testClient(t *testing.T, graphURL string) (*graphClient, *sleeps) {
	t.Helper()
	s := &sleeps{}
	return &graphClient{
		http:          &http.Client{Timeout: 10 * time.Second},
		base:          graphURL,
		version:       graphtest.Version,
		phoneNumberID: graphtest.PhoneNumberID,
		token:         graphtest.Token,
		maxAttempts:   DefaultMaxAttempts,
		retryDelay:    DefaultRetryDelay,
		maxMedia:      DefaultMaxMediaBytes,
		sleep:         s.sleep,
	}, s
}

func TestTemporary(t *testing.T) {
	tests := []struct {
		status, code int
		want         bool
	}{
		{429, 130429, true},
		{500, 1, true},
		{503, 2, true},
		{503, 133004, true},
		{500, 131000, true},
		{400, 131056, true}, // pair rate limit: answered 400, passes in seconds
		{400, 130429, true},
		{400, 80007, true},
		{400, 4, true},
		{400, 131048, false}, // spam rate limit: follows the quality rating
		{400, 131047, false}, // outside the 24-hour window
		{400, 131026, false},
		{400, 100, false},
		{401, 190, false},
	}
	for _, tt := range tests {
		e := &APIError{StatusCode: tt.status, Code: tt.code}
		if got := e.Temporary(); got != tt.want {
			t.Errorf("HTTP %d code %d: Temporary = %v, want %v", tt.status, tt.code, got, tt.want)
		}
	}
}

func TestSendTextRetries(t *testing.T) {
	tests := []struct {
		name     string
		fail     []graphtest.Failure
		attempts int
		sent     int
		err      string // part of the error; "" for success
	}{
		{"pair rate limit", []graphtest.Failure{{Status: 400, Code: 131056}}, 2, 1, ""},
		{"something went wrong", []graphtest.Failure{{Status: 500, Code: 131000}}, 2, 1, ""},
		{"server temporarily unavailable", []graphtest.Failure{{Status: 503, Code: 133004}, {Status: 503, Code: 133004}}, 3, 1, ""},
		{"throughput", []graphtest.Failure{{Status: 429}}, 2, 1, ""},
		{"connection dropped", []graphtest.Failure{{Drop: true}, {Drop: true}}, 3, 1, ""},
		{"spam rate limit", []graphtest.Failure{{Status: 400, Code: 131048}}, 1, 0, "Spam rate limit hit"},
		{"re-engagement", []graphtest.Failure{{Status: 400, Code: 131047}}, 1, 0, "Re-engagement message"},
		{"always unavailable", repeat(graphtest.Failure{Status: 503}, 10), DefaultMaxAttempts, 0, "after 6 attempts"},
		{"never answered", repeat(graphtest.Failure{Drop: true}, 10), DefaultMaxAttempts, 0, "no answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			graph := graphtest.NewServer(t)
			for _, f := range tt.fail {
				graph.FailNextWith(1, f)
			}
			c, s := testClient(t, graph.URL)
			_, err := c.sendText(context.Background(), "16505551234", "hi")
			if tt.err == "" && err != nil {
				t.Errorf("sendText: %v", err)
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("sendText = %v, want an error with %q", err, tt.err)
			}
			if n := graph.Attempts(); n != tt.attempts {
				t.Errorf("%d attempts, want %d", n, tt.attempts)
			}
			if n := len(graph.Sent()); n != tt.sent {
				t.Errorf("%d sent, want %d", n, tt.sent)
			}
			if n := len(s.waits()); n != tt.attempts-1 {
				t.Errorf("waited %d times between %d attempts", n, tt.attempts)
			}
		})
	}
}

func repeat(f graphtest.Failure, n int) []graphtest.Failure {
	out := make([]graphtest.Failure, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// The default budget: 6 attempts, waits doubling from 2s with jitter in
// their upper half, each at most 30s, about a minute in all.
func TestSendTextBackoff(t *testing.T) {
	graph := graphtest.NewServer(t)
	graph.FailNext(10, http.StatusInternalServerError)
	c, s := testClient(t, graph.URL)
	if _, err := c.sendText(context.Background(), "16505551234", "hi"); err == nil {
		t.Fatal("sent through six 500s")
	}
	waits := s.waits()
	if len(waits) != DefaultMaxAttempts-1 {
		t.Fatalf("waits %v, want %d", waits, DefaultMaxAttempts-1)
	}
	var total time.Duration
	for i, w := range waits {
		d := min(DefaultRetryDelay<<i, maxBackoff)
		if w < d/2 || w > d {
			t.Errorf("wait %d is %v, want between %v and %v", i+1, w, d/2, d)
		}
		total += w
	}
	if total > retryBudget || total < 30*time.Second {
		t.Errorf("waited %v in all, want 30s to %v", total, retryBudget)
	}
}

func TestSendTextHonoursRetryAfter(t *testing.T) {
	t.Run("within the budget", func(t *testing.T) {
		graph := graphtest.NewServer(t)
		graph.FailNextWith(1, graphtest.Failure{Status: 400, Code: 131056, RetryAfter: 7 * time.Second})
		c, s := testClient(t, graph.URL)
		if _, err := c.sendText(context.Background(), "16505551234", "hi"); err != nil {
			t.Fatal(err)
		}
		if got := s.waits(); len(got) != 1 || got[0] != 7*time.Second {
			t.Errorf("waits %v, want the 7s Retry-After asked for", got)
		}
	})
	t.Run("beyond the budget", func(t *testing.T) {
		graph := graphtest.NewServer(t)
		graph.FailNextWith(1, graphtest.Failure{Status: 429, RetryAfter: 2 * time.Minute})
		c, s := testClient(t, graph.URL)
		_, err := c.sendText(context.Background(), "16505551234", "hi")
		if err == nil || !strings.Contains(err.Error(), "gave up") || !strings.Contains(err.Error(), "Rate limit hit") {
			t.Errorf("sendText = %v, want it to give up with the rate limit", err)
		}
		if got := s.waits(); len(got) != 0 {
			t.Errorf("waited %v though the server asked for more than the budget", got)
		}
		if n := graph.Attempts(); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 6, 8, 20, 0, 0, 0, time.UTC)
	tests := map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		" 10 ":                          10 * time.Second,
		"0":                             0,
		"-5":                            0,
		"soon":                          0,
		"99999999999999":                24 * time.Hour,
		"Sun, 08 Jun 2025 20:00:42 GMT": 42 * time.Second,
		"Sun, 08 Jun 2025 19:59:00 GMT": 0,
	}
	for h, want := range tests {
		if got := retryAfter(h, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", h, got, want)
		}
	}
}

// A request that times out got no answer: it is tried again.
func TestSendTextRetriesTimeouts(t *testing.T) {
	var (
		mu       sync.Mutex
		requests int
		release  = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		first := requests == 1
		mu.Unlock()
		if first {
			// Hold the answer until the client gives up (which the
			// server notices once the body is read) or the test ends.
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"messaging_product":"whatsapp","messages":[{"id":"wamid.X"}]}`))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c, _ := testClient(t, srv.URL)
	c.http = &http.Client{Timeout: 50 * time.Millisecond}
	if _, err := c.sendText(context.Background(), "16505551234", "hi"); err != nil {
		t.Fatalf("sendText after a timeout: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if requests != 2 {
		t.Errorf("%d requests, want 2", requests)
	}
}

// The server's own shutdown is not a network failure: no retry.
func TestSendTextStopsWithTheContext(t *testing.T) {
	graph := graphtest.NewServer(t)
	c, s := testClient(t, graph.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.sendText(ctx, "16505551234", "hi"); !errors.Is(err, context.Canceled) {
		t.Errorf("sendText = %v, want context.Canceled", err)
	}
	if n := len(s.waits()); n != 0 {
		t.Errorf("waited %d times to retry a cancelled send", n)
	}

	graph.FailNext(1, http.StatusServiceUnavailable)
	s.err = context.DeadlineExceeded
	_, err := c.sendText(context.Background(), "16505551234", "hi")
	if err == nil || !strings.Contains(err.Error(), "gave up waiting") {
		t.Errorf("sendText = %v, want it to give up when the wait is cut short", err)
	}
	if n := graph.Attempts(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}
