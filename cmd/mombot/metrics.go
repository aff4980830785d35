package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/metrics"
)

// metricsServer serves /metrics on its own address, apart from the public
// webhook port: the metrics are for the host's monitoring, not the world.
type metricsServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// startMetrics listens on addr and serves m's /metrics there until stop;
// serve has checked that addr is not the webhook server's address.
func startMetrics(e *env, m *metrics.Metrics, addr string) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	s := &metricsServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	e.log.Info("mombot: metrics serving", "addr", ln.Addr().String(), "path", "/metrics")
	return s, nil
}

// stop shuts the metrics server down.
func (s *metricsServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
	<-s.done
}

// sameAddr reports whether two listen addresses name the same port on an
// overlapping host (an empty or unspecified host covers every one).
func sameAddr(a, b string) bool {
	ah, ap, err1 := net.SplitHostPort(a)
	bh, bp, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || ap != bp || ap == "0" {
		return false
	}
	wild := func(h string) bool { ip := net.ParseIP(h); return h == "" || (ip != nil && ip.IsUnspecified()) }
	return ah == bh || wild(ah) || wild(bh)
}

// inboxSenders counts the senders with messages waiting in inbox.
func inboxSenders(inbox delivery.Inbox) func(ctx context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		keys, err := inbox.Keys(ctx)
		return len(keys), err
	}
}
