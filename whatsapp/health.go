package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// ErrUnhealthy is wrapped by CheckHealth's error when the server answered
// GET /healthz with a status other than 200 (503 while it shuts down).
var ErrUnhealthy = errors.New("not healthy")

// HealthURL returns the URL of GET /healthz on a Server listening on addr,
// a listen address such as ":8080": a host left out or unspecified
// (":8080", "0.0.0.0:8080", "[::]:8080") is reached on the loopback
// address of its family. An address without a port is an error.
func HealthURL(addr string) (string, error) {
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

// CheckHealth asks the Server listening on addr (see HealthURL) for GET
// /healthz with client (nil means http.DefaultClient) and returns the
// first line of a 200 answer: "ok", or "degraded: ..." while a dependency
// such as Redis is down, since the server still answers then. Another
// status is an error wrapping ErrUnhealthy, with the answer's first line;
// no answer before ctx is done is the client's error. The caller bounds
// the wait with ctx: a health check that hangs is a failed one.
func CheckHealth(ctx context.Context, client *http.Client, addr string) (string, error) {
	if client == nil {
		client = http.DefaultClient
	}
	u, err := HealthURL(addr)
	if err != nil {
		return "", fmt.Errorf("whatsapp: health: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("whatsapp: health: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("whatsapp: health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	status := strings.TrimSpace(strings.SplitN(string(body), "\n", 2)[0])
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("whatsapp: health: %s answered %s: %s: %w", u, resp.Status, status, ErrUnhealthy)
	}
	return status, nil
}
