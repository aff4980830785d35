package whatsapp_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp"
)

// TestListenAndServe: the server answers on the address it reports, and
// returns nil once the shutdown its context asked for is done; then it
// refuses deliveries. On an address in use it returns the listening error,
// having shut down all the same.
func TestListenAndServe(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- h.srv.ListenAndServe(ctx, "127.0.0.1:0", &whatsapp.ServeOptions{Serving: func(a net.Addr) { addrs <- a }, Drain: time.Second})
	}()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("ListenAndServe returned before serving: %v", err)
	}
	resp, err := http.Get("http://" + addr.String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		t.Fatalf("/healthz = %d %q", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ListenAndServe after its context ended = %v, want nil", err)
	}
	h.shut = true
	if code := h.post(text(sheenaWaID, "wamid.late", "hello")); code != http.StatusServiceUnavailable {
		t.Errorf("delivery after the shutdown: %d, want 503", code)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	h.start()
	err = h.srv.ListenAndServe(context.Background(), busy.Addr().String(), nil)
	h.shut = true
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("ListenAndServe on an address in use = %v, want the listening error", err)
	}
	if code := h.post(text(sheenaWaID, "wamid.late2", "hello")); code != http.StatusServiceUnavailable {
		t.Errorf("delivery after a failed listen: %d, want 503: the server was not shut down", code)
	}
}
