package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Defaults of [ServeOptions].
const (
	DefaultHTTPShutdown = 10 * time.Second
	DefaultDrain        = 60 * time.Second
)

// ServeOptions configure [Server.ListenAndServe]. The zero value means the
// defaults.
type ServeOptions struct {
	// Serving, if set, is called with the address listened on once the
	// server serves.
	Serving func(addr net.Addr)
	// HTTPShutdown bounds the wait for the requests in flight at shutdown;
	// 0 means DefaultHTTPShutdown.
	HTTPShutdown time.Duration
	// Drain bounds the answering of the messages accepted, at shutdown
	// (the Queue's Shutdown); what is left waits in a durable inbox for
	// the next start. 0 means DefaultDrain.
	Drain time.Duration
}

// ListenAndServe listens on addr and serves s over HTTP until ctx is done
// or serving fails, and then shuts down in the one order every way out
// takes: the HTTP server stops taking requests (those in flight get
// HTTPShutdown), then the messages accepted are answered for up to Drain
// ([Server.Shutdown]). When listening fails, the messages an earlier
// process left in the inbox, which the Queue started on, still get Drain.
// It returns nil once a shutdown that ctx asked for is done, and otherwise
// the error of listening, serving or shutting down. Close what the Queue's
// handler, inbox and locker use only after it returns.
func (s *Server) ListenAndServe(ctx context.Context, addr string, opts *ServeOptions) error {
	var o ServeOptions
	if opts != nil {
		o = *opts
	}
	if o.HTTPShutdown <= 0 {
		o.HTTPShutdown = DefaultHTTPShutdown
	}
	if o.Drain <= 0 {
		o.Drain = DefaultDrain
	}
	shutdown := func(srv *http.Server) error {
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), o.HTTPShutdown)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				s.log.Warn("whatsapp: http shutdown", "err", err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.Drain)
		defer cancel()
		return s.Shutdown(ctx)
	}
	// cut joins the error that ended serving with the shutdown's, if any.
	cut := func(err error, srv *http.Server) error {
		if serr := shutdown(srv); serr != nil {
			return errors.Join(err, serr)
		}
		return err
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return cut(fmt.Errorf("whatsapp: listen: %w", err), nil)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if o.Serving != nil {
		o.Serving(ln.Addr())
	}
	select {
	case err := <-served:
		return cut(fmt.Errorf("whatsapp: serve: %w", err), srv)
	case <-ctx.Done():
	}
	s.log.Info("whatsapp: shutting down: finishing the messages in hand")
	return shutdown(srv)
}
