package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server serves a Metrics' GET /metrics on an address of its own, apart
// from the public webhook port: the metrics are for the host's
// monitoring, not the world. Create it with [Metrics.Serve] and stop it
// with [Server.Shutdown].
type Server struct {
	srv  *http.Server
	mux  *http.ServeMux
	ln   net.Listener
	done chan error
}

// Serve listens on addr ("127.0.0.1:9090"; port 0 picks a free one) and
// serves the metrics at GET /metrics there, in a goroutine of its own,
// until Shutdown. Any other path is 404 unless given to Handle. The address being taken is an
// error, returned before anything is served.
func (m *Metrics) Serve(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	s := &Server{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		mux:  mux,
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Handle serves h for pattern (an http.ServeMux pattern, such as
// "GET /healthz") next to the metrics, on this address that is not public:
// what the host's monitoring may read and the world should not. It may be
// called while the server serves.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Addr is the address the server listens on, with the port chosen.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops the server: it stops listening, lets the scrapes in
// progress finish until ctx is done, and returns once the server's
// goroutine has ended. It returns ctx's error if scrapes were cut short.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// SharesPort reports whether two listen addresses ("host:port") would
// serve on the same port of an overlapping host: the same host, or either
// one empty or unspecified ("", "0.0.0.0", "[::]"), which covers every
// host. Port 0 (a port picked at listening) shares nothing, and neither
// does an address that does not parse. mombot serve uses it to refuse a
// metrics address that is the public webhook's.
func SharesPort(a, b string) bool {
	ah, ap, err1 := net.SplitHostPort(a)
	bh, bp, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || ap != bp || ap == "0" {
		return false
	}
	wild := func(h string) bool { ip := net.ParseIP(h); return h == "" || (ip != nil && ip.IsUnspecified()) }
	return ah == bh || wild(ah) || wild(bh)
}
