package buildinfo_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/mombot/mombot/internal/buildinfo"
)

func TestString(t *testing.T) {
	stamped := []debug.BuildSetting{
		{Key: "-trimpath", Value: "true"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-24T00:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"a release with VCS stamps, built from a changed tree",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: stamped},
			true, "v1.4.0 (0123456789ab, 2026-11-24T00:00:00Z, modified) go1.26.8"},
		{"a clean tree: no modified",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			true, "v1.4.0 (abc) go1.26.8"},
		{"a checkout built without VCS stamps (a worktree, -buildvcs=false)",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			true, "(devel) go1.26.8"},
		{"no build information: the running Go version only",
			nil, false, "unknown " + runtime.Version()},
		{"ok but nil",
			nil, true, "unknown " + runtime.Version()},
	} {
		if got := buildinfo.FromDebug(tt.bi, tt.ok).String(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The log group keeps the full revision, which the one-line form shortens.
func TestLogValue(t *testing.T) {
	b := buildinfo.Info{Version: "v1.4.0", Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2026-11-24T00:00:00Z", Go: "go1.26.8"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("mombot: serving", "build", b)
	var line struct{ Build map[string]any }
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"version": "v1.4.0", "revision": b.Revision, "time": b.Time, "modified": false, "go": "go1.26.8"}
	for k, v := range want {
		if line.Build[k] != v {
			t.Errorf("build.%s = %v, want %v (the group: %v)", k, line.Build[k], v, line.Build)
		}
	}
	if len(line.Build) != len(want) {
		t.Errorf("the group has %d fields, want %d: %v", len(line.Build), len(want), line.Build)
	}
}

// The test binary has build information: this module's version as a
// checkout sees it, and the toolchain's Go version.
func TestReadThisBinary(t *testing.T) {
	b := buildinfo.Read()
	if b.Go != runtime.Version() || b.Version == "" {
		t.Errorf("the test binary's build: %+v, want a module version and Go %s", b, runtime.Version())
	}
	if !strings.HasSuffix(b.String(), " "+runtime.Version()) {
		t.Errorf("String() = %q, want it to end with the Go version", b.String())
	}
}
