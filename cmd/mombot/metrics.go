package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/metrics"
)

// sameAddr reports whether the metrics address would share the webhook's
// port; serve refuses it.
var sameAddr = metrics.SharesPort

// metricsServer is serve's metrics server.
type metricsServer struct{ *metrics.Server }

// startMetrics serves m's /metrics on addr until stop.
func startMetrics(e *env, m *metrics.Metrics, addr string) (metricsServer, error) {
	s, err := m.Serve(addr)
	if err != nil {
		return metricsServer{}, fmt.Errorf("serve: %w", err)
	}
	e.log.Info("mombot: metrics serving", "addr", s.Addr().String(), "path", "/metrics")
	return metricsServer{s}, nil
}

func (s metricsServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Shutdown(ctx)
}

// inboxSenders counts the senders with messages waiting in inbox.
func inboxSenders(inbox delivery.Inbox) func(ctx context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		keys, err := inbox.Keys(ctx)
		return len(keys), err
	}
}
