package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ErrNotLoopback is wrapped by [CheckAddr]'s error for an address that
// other machines could reach while the page has no login.
var ErrNotLoopback = errors.New("not a loopback address")

// CheckAddr checks the address the page is to listen on, host:port: it
// must be well formed, and, without a token (login false), on loopback
// only (127.0.0.1, ::1 or localhost), so that nobody else on the network
// can chat as the family or read what they said.
func CheckAddr(addr string, login bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("web: address %q: give host:port, such as 127.0.0.1:8080", addr)
	}
	if login {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("web: %s is %w: without MOMBOT_WEB_TOKEN the page has no login, so it listens on this machine only (such as 127.0.0.1:8080); set MOMBOT_WEB_TOKEN to serve it to other machines", addr, ErrNotLoopback)
}

// URL returns the address to open the page at, for a listener's address:
// a wildcard host (0.0.0.0, ::) becomes localhost.
func URL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// Serve serves the page on ln until ctx is done, and then shuts down: the
// HTTP server stops (the requests in flight get a few seconds), then the
// messages being answered get drain ([Server.Shutdown]). It returns nil
// after a shutdown that ctx asked for, and otherwise serving's error.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		// A form with a file over a slow line takes a while.
		ReadTimeout:  5 * time.Minute,
		WriteTimeout: time.Minute,
		IdleTimeout:  2 * time.Minute,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-served:
		err = fmt.Errorf("web: serve: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(sctx)
		cancel()
	}
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if serr := s.Shutdown(dctx); serr != nil {
		err = errors.Join(err, serr)
	}
	return err
}
