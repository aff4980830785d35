// Package buildinfo says which build of mombot is running, from what the Go
// toolchain stamps into every binary: the module version ("v1.2.3" from
// go install ...@v1.2.3, "(devel)" from a checkout), the VCS revision and
// commit time and whether the tree had uncommitted changes (go build
// stamps those inside a git clone unless -buildvcs=false), and the Go
// version.
package buildinfo

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is one build's description. Fields the build did not record are
// empty.
type Info struct {
	Version  string // the main module's version
	Revision string // the VCS revision, in full
	Time     string // the revision's commit time, RFC 3339
	Modified bool   // the tree had uncommitted changes
	Go       string // the Go version that built it
}

// Read returns the running binary's build. A binary without build
// information (built outside module mode) has only the Go version.
func Read() Info {
	return FromDebug(debug.ReadBuildInfo())
}

// FromDebug reads bi, as debug.ReadBuildInfo returns it with ok. Without
// it (ok false or bi nil), the Info has only the running Go version.
func FromDebug(bi *debug.BuildInfo, ok bool) Info {
	b := Info{Go: runtime.Version()}
	if !ok || bi == nil {
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

// String is the one-line form "mombot version" prints and /healthz shows:
// "v1.2.3 (0123456789ab, 2026-11-24T00:00:00Z, modified) go1.26.8", with
// "unknown" for a version not recorded and the parenthesis only when the
// build has VCS stamps.
func (b Info) String() string {
	v := b.Version
	if v == "" {
		v = "unknown"
	}
	var vcs []string
	if b.Revision != "" {
		vcs = append(vcs, ShortRevision(b.Revision))
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

// LogValue implements slog.LogValuer: a group of version, revision (in
// full), time, modified and go.
func (b Info) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("version", b.Version),
		slog.String("revision", b.Revision),
		slog.String("time", b.Time),
		slog.Bool("modified", b.Modified),
		slog.String("go", b.Go),
	)
}

// ShortRevision shortens a commit hash to its first 12 characters, which
// git and "go version -m" readers accept as unambiguous in practice.
func ShortRevision(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}
