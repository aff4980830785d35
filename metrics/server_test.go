package metrics_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/metrics"
)

// The metrics server answers GET /metrics on its own address, nothing
// else, and stops on Shutdown.
func TestServe(t *testing.T) {
	m := metrics.New()
	m.Webhook("")
	s, err := m.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr().String()

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `mombot_webhooks_total{reason="",result="received"} 1`) {
		t.Errorf("GET /metrics: %s, want 200 with the webhook counted:\n%s", resp.Status, body)
	}
	for _, tt := range []struct{ method, path string }{{"GET", "/"}, {"GET", "/healthz"}, {"POST", "/metrics"}, {"GET", "/webhook"}} {
		req, _ := http.NewRequest(tt.method, base+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s %s: 200, want it refused: the server serves the metrics only", tt.method, tt.path)
		}
	}

	// The address is taken while it serves.
	if _, err := m.Serve(s.Addr().String()); err == nil || !strings.HasPrefix(err.Error(), "metrics: ") {
		t.Errorf("Serve on a taken address: %v, want the listening error", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", s.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Error("the metrics address still accepts connections after Shutdown")
	}
}

func TestSharesPort(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{":8080", ":8080", true},
		{":8080", "127.0.0.1:8080", true},       // the wildcard covers loopback
		{"0.0.0.0:8080", "10.0.0.5:8080", true}, // so does an unspecified IPv4
		{"[::]:8080", "127.0.0.1:8080", true},   // and IPv6's
		{"127.0.0.1:8080", "127.0.0.1:8080", true},
		{"127.0.0.1:9090", ":8080", false},         // another port
		{"127.0.0.1:8080", "10.0.0.5:8080", false}, // another host
		{"127.0.0.1:0", "127.0.0.1:0", false},      // ports picked apart
		{"9090", ":9090", false},                   // not an address
	} {
		if got := metrics.SharesPort(tt.a, tt.b); got != tt.want {
			t.Errorf("SharesPort(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
