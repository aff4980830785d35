package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"
)

// buildInfo is what a binary knows of its own build: the module version
// ("v1.2.3" from go install ...@v1.2.3, "(devel)" from a checkout), the
// VCS revision and commit time, whether the tree had uncommitted changes,
// and the Go version. go build stamps the VCS fields when it builds inside
// a git checkout (-buildvcs, on by default).
type buildInfo struct {
	Version  string
	Revision string
	Time     string
	Modified bool
	Go       string
}

// readBuildInfo is replaced by tests.
var readBuildInfo = debug.ReadBuildInfo

// currentBuild returns this binary's build information; fields the build
// did not record are empty.
func currentBuild() buildInfo {
	b := buildInfo{Go: runtime.Version()}
	bi, ok := readBuildInfo()
	if !ok {
		return b
	}
	b.Version = bi.Main.Version
	if bi.GoVersion != "" {
		b.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one-line form "mombot" prints: "v1.2.3 (abc1234def56
// 2026-11-24T00:00:00Z, modified) go1.26.8".
func (b buildInfo) String() string {
	v := b.Version
	if v == "" {
		v = "unknown"
	}
	var vcs []string
	if b.Revision != "" {
		vcs = append(vcs, shortRevision(b.Revision))
	}
	if b.Time != "" {
		vcs = append(vcs, b.Time)
	}
	if b.Modified {
		vcs = append(vcs, "modified")
	}
	if len(vcs) > 0 {
		v += " (" + strings.Join(vcs, ", ") + ")"
	}
	return v + " " + b.Go
}

// LogValue implements slog.LogValuer: serve logs the build at start.
func (b buildInfo) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("version", b.Version),
		slog.String("revision", b.Revision),
		slog.String("time", b.Time),
		slog.Bool("modified", b.Modified),
		slog.String("go", b.Go),
	)
}

// shortRevision shortens a commit hash to 12 characters, as "go version
// -m" readers and git's short forms expect.
func shortRevision(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

const versionUsage = `Usage: mombot version

Prints the build: module version, VCS revision and commit time (and
"modified" when built from a changed tree), and the Go version.
"mombot --version" prints the same.`

func runVersion(_ context.Context, e *env, args []string) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			fmt.Fprintln(e.stderr, versionUsage)
			return nil
		}
		return usagef("version takes no arguments, got %q", strings.Join(args, " "))
	}
	_, err := fmt.Fprintln(e.stdout, "mombot "+currentBuild().String())
	return err
}
