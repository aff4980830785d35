package main

import (
	"bytes"
	"context"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/mombot/mombot/internal/buildinfo"
)

// fakeBuild makes currentBuild report info for the rest of the test.
func fakeBuild(t *testing.T, info *debug.BuildInfo) {
	t.Helper()
	old := currentBuild
	currentBuild = func() buildinfo.Info { return buildinfo.FromDebug(info, info != nil) }
	t.Cleanup(func() { currentBuild = old })
}

func TestVersionPrintsTheBuild(t *testing.T) {
	fakeBuild(t, &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/mombot/mombot", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-24T00:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	})
	want := "mombot v1.4.0 (0123456789ab, 2026-11-24T00:00:00Z, modified) go1.26.8\n"
	for _, args := range [][]string{{"mombot", "version"}, {"mombot", "--version"}} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if got := stdout.String(); got != want {
			t.Errorf("%v printed %q, want %q", args, got, want)
		}
		if stderr.Len() != 0 {
			t.Errorf("%v wrote to stderr: %q", args, stderr.String())
		}
	}
}

func TestVersionRefusesArguments(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"mombot", "version", "extra"}, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err, &stderr); code != 2 {
		t.Errorf("version extra: exit %d (%v), want 2", code, err)
	}
}

// The files the README's quick start makes in the checkout (mombot.json
// and what the commands keep in data/) are ignored by git, so that they
// are not committed by mistake and do not stamp the build "modified".
func TestQuickStartFilesAreIgnored(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git here: .gitignore is not checked")
	}
	root, err := exec.Command(git, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): .gitignore is not checked", err)
	}
	for _, path := range []string{"mombot.json", "data/conversations.json", "data/lists.json", "data/mombot.db", "mombot"} {
		cmd := exec.Command(git, "check-ignore", "-q", "--no-index", path)
		cmd.Dir = strings.TrimSpace(string(root))
		if err := cmd.Run(); err != nil {
			t.Errorf("git does not ignore %s at the checkout's root (%v)", path, err)
		}
	}
}
