package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

const healthcheckUsage = `Usage: mombot healthcheck [flags]

Asks the server listening on --listen (the same flag and MOMBOT_LISTEN as
serve) for GET /healthz and exits 0 when it answers 200 ("ok", or
"degraded" while a dependency such as Redis is down: it still answers),
1 otherwise. For container health checks, which then need no curl.

Flags:`

// defaultHealthTimeout bounds the whole check: a health check that hangs
// is a failed one.
const defaultHealthTimeout = 3 * time.Second

func runHealthcheck(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("mombot healthcheck", flag.ContinueOnError)
	listen := fs.String("listen", envOr(e, "MOMBOT_LISTEN", ":8080"), "the address serve listens on (env MOMBOT_LISTEN)")
	timeout := fs.Duration("timeout", defaultHealthTimeout, "how long to wait for the answer")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), healthcheckUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("healthcheck takes no arguments, got %q", strings.Join(fs.Args(), " "))
	}
	if *timeout <= 0 {
		return usagef("healthcheck: --timeout must be positive, got %v", *timeout)
	}
	u, err := healthURL(*listen)
	if err != nil {
		return usagef("healthcheck: --listen: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	status := strings.TrimSpace(strings.SplitN(string(body), "\n", 2)[0])
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s: %s", u, resp.Status, status)
	}
	fmt.Fprintln(e.stdout, status)
	return nil
}

// healthURL is the /healthz URL of a server listening on addr: a host
// left out or unspecified (":8080", "0.0.0.0:8080", "[::]:8080") is
// reached on the loopback address.
func healthURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port == "" || port == "0" {
		return "", fmt.Errorf("%q names no port", addr)
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
