package whatsapp_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp"
)

func TestHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		":8080":          "http://127.0.0.1:8080/healthz",
		"0.0.0.0:9000":   "http://127.0.0.1:9000/healthz",
		"[::]:8080":      "http://[::1]:8080/healthz",
		"10.0.0.5:8080":  "http://10.0.0.5:8080/healthz",
		"localhost:8080": "http://localhost:8080/healthz",
	} {
		if got, err := whatsapp.HealthURL(addr); err != nil || got != want {
			t.Errorf("HealthURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	for _, bad := range []string{"8080", "", "host:", "127.0.0.1:0"} {
		if got, err := whatsapp.HealthURL(bad); err == nil {
			t.Errorf("HealthURL(%q) = %q, want an error", bad, got)
		}
	}
}

// CheckHealth against a real Server: ok, degraded (still a pass: the
// server answers), and an error once it shuts down.
func TestCheckHealth(t *testing.T) {
	var down error
	h := newHarness(t, func(c *setup) {
		c.Health = func(context.Context) error { return down }
	})
	ts := httptest.NewServer(h.srv)
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if got, err := whatsapp.CheckHealth(ctx, nil, addr); err != nil || got != "ok" {
		t.Errorf("a healthy server: %q, %v; want ok", got, err)
	}
	down = errors.New("redis: dial tcp 10.0.3.7:6379: connection refused")
	if got, err := whatsapp.CheckHealth(ctx, ts.Client(), addr); err != nil || !strings.HasPrefix(got, "degraded") {
		t.Errorf("a degraded server: %q, %v; want degraded and no error", got, err)
	}
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h.shut = true
	got, err := whatsapp.CheckHealth(ctx, nil, addr)
	if !errors.Is(err, whatsapp.ErrUnhealthy) || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("a server shutting down: %q, %v; want ErrUnhealthy with 503 and its words", got, err)
	}
}

func TestCheckHealthWithoutAnswer(t *testing.T) {
	// Nothing listens: refused at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if _, err := whatsapp.CheckHealth(context.Background(), nil, closed); err == nil || errors.Is(err, whatsapp.ErrUnhealthy) {
		t.Errorf("no server: %v, want a connection error", err)
	}

	// A server that never answers: the context ends the wait.
	stuck := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(stuck)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := whatsapp.CheckHealth(ctx, nil, strings.TrimPrefix(ts.URL, "http://")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a server that does not answer: %v, want the context's deadline", err)
	}

	if _, err := whatsapp.CheckHealth(context.Background(), nil, "8080"); err == nil {
		t.Error("an address without a port: no error")
	}
}
