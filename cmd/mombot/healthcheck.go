package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/whatsapp"
)

const healthcheckUsage = `Usage: mombot healthcheck [flags]

Asks the server listening on --listen (the same flag and MOMBOT_LISTEN as
serve) for GET /healthz and exits 0 when it answers 200 ("ok", or
"degraded" while a dependency such as Redis is down: it still answers),
1 otherwise. For container health checks, which then need no curl.

Flags:`

func runHealthcheck(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("mombot healthcheck", healthcheckUsage)
	listen := fs.String("listen", envOr(e, "MOMBOT_LISTEN", ":8080"), "the address serve listens on (env MOMBOT_LISTEN)")
	// A health check that hangs is a failed one.
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := cli.Parse(fs, e.stderr, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("healthcheck takes no arguments, got %q", strings.Join(fs.Args(), " "))
	}
	if *timeout <= 0 {
		return cli.Usagef("healthcheck: --timeout must be positive, got %v", *timeout)
	}
	if err := cli.CheckListen("healthcheck: --listen", *listen); err != nil {
		return err
	}
	if _, err := whatsapp.HealthURL(*listen); err != nil {
		return cli.Usagef("healthcheck: --listen: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	status, err := whatsapp.CheckHealth(ctx, nil, *listen)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	fmt.Fprintln(e.stdout, status)
	return nil
}
