package buildinfo_test

import (
	"fmt"
	"runtime/debug"

	"github.com/mombot/mombot/internal/buildinfo"
)

func ExampleInfo_String() {
	b := buildinfo.FromDebug(&debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/mombot/mombot", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-24T00:00:00Z"},
		},
	}, true)
	fmt.Println("mombot " + b.String())
	// Output: mombot v1.4.0 (0123456789ab, 2026-11-24T00:00:00Z) go1.26.8
}
