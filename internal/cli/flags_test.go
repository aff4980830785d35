package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
)

// Flags may come before, between and after the words, which keep their
// order; after "--" everything is a word.
func TestParseInterleaved(t *testing.T) {
	tests := []struct {
		args  []string
		words []string
		full  bool
		from  string
	}{
		{[]string{"show", "+1415", "--full"}, []string{"show", "+1415"}, true, ""},
		{[]string{"--full", "list"}, []string{"list"}, true, ""},
		{[]string{"hi", "--from", "x", "there"}, []string{"hi", "there"}, false, "x"},
		{[]string{"--from", "x", "--", "--full", "-h"}, []string{"--full", "-h"}, false, "x"},
		{[]string{"a", "--", "b", "--full"}, []string{"a", "b", "--full"}, false, ""},
		{nil, nil, false, ""},
	}
	for _, tt := range tests {
		fs := NewFlagSet("mombot test", "Usage: mombot test")
		full := fs.Bool("full", false, "")
		from := fs.String("from", "", "")
		words, err := ParseInterleaved(fs, &strings.Builder{}, tt.args)
		if err != nil || fmt.Sprint(words) != fmt.Sprint(tt.words) || *full != tt.full || *from != tt.from {
			t.Errorf("%q: words %q, --full %v, --from %q, %v; want %q, %v, %q", tt.args, words, *full, *from, err, tt.words, tt.full, tt.from)
		}
	}
}

// -h prints the usage and the flags and is flag.ErrHelp; a mistake is one
// line that names the command and its -h, and prints nothing.
func TestParseErrors(t *testing.T) {
	var out strings.Builder
	fs := NewFlagSet("mombot test", "Usage: mombot test [--n N]")
	fs.Int("n", 0, "how many")
	if err := Parse(fs, &out, []string{"-h"}); !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(out.String(), "Usage: mombot test [--n N]\n") || !strings.Contains(out.String(), "how many") {
		t.Errorf("-h: %v, printed %q", err, out.String())
	}
	out.Reset()
	err := Parse(fs, &out, []string{"--n", "lots"})
	var u UsageError
	if !errors.As(err, &u) || !strings.HasPrefix(err.Error(), "test: invalid value") || !strings.HasSuffix(err.Error(), "(see mombot test -h)") || strings.Contains(err.Error(), "\n") || out.Len() != 0 {
		t.Errorf("a bad value: %v, printed %q", err, out.String())
	}
	if err := Parse(fs, &out, []string{"--m"}); !errors.As(err, &u) || !strings.Contains(err.Error(), "flag provided but not defined: -m") {
		t.Errorf("an unknown flag: %v", err)
	}
}
