package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/mombot/mombot/internal/buildinfo"
	"github.com/mombot/mombot/internal/cli"
)

const versionUsage = `Usage: mombot version

Prints the build: module version, VCS revision and commit time (and
"modified" when built from a changed tree), and the Go version.
"mombot --version" prints the same.`

// currentBuild is this binary's build, which serve logs and /healthz shows.
var currentBuild = buildinfo.Read

func runVersion(_ context.Context, e *env, args []string) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			fmt.Fprintln(e.stderr, versionUsage)
			return nil
		}
		return cli.Usagef("version takes no arguments, got %q", strings.Join(args, " "))
	}
	_, err := fmt.Fprintln(e.stdout, "mombot "+currentBuild().String())
	return err
}
