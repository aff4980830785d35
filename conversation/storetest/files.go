package storetest

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"
)

// Files returns every file in dir with its size, mode and modification
// time, so that two calls differ if a file was created, removed or
// written in between: what the tests of a read-only store compare.
func Files(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			tb.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%d bytes, %v, modified %s", fi.Size(), fi.Mode(), fi.ModTime().Format(time.RFC3339Nano))
	}
	return out
}

// SameFiles fails the test, naming what did it, if dir's files differ
// from before (Files): one created, changed or removed.
func SameFiles(tb testing.TB, dir string, before map[string]string, what string) {
	tb.Helper()
	after := Files(tb, dir)
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if b, ok := before[name]; !ok {
			tb.Errorf("%s created %s", what, name)
		} else if b != after[name] {
			tb.Errorf("%s changed %s: %s, was %s", what, name, after[name], b)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(before)) {
		if _, ok := after[name]; !ok {
			tb.Errorf("%s removed %s", what, name)
		}
	}
}
