package whatsapp_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mombot/mombot/whatsapp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		text string
		max  int
		want []string
	}{
		{"empty", "", 10, nil},
		{"blank", " \n\n ", 10, nil},
		{"fits", "hello", 10, []string{"hello"}},
		{"exactly", "0123456789", 10, []string{"0123456789"}},
		{"trimmed", "  hi  ", 10, []string{"hi"}},
		{"paragraph before line", "aaaa bbbb\ncc\n\ndd ee", 14, []string{"aaaa bbbb\ncc", "dd ee"}},
		{"paragraph with spaces", "aaaaaa\n  \nbbbbbb", 12, []string{"aaaaaa", "bbbbbb"}},
		{"line before word", "aaaa bbbb\ncccc dddd", 14, []string{"aaaa bbbb", "cccc dddd"}},
		{"word", "aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		{"break right after the limit", "aaaa bbbb\ncccc", 9, []string{"aaaa bbbb", "cccc"}},
		{"long word", "abcdefghijkl", 5, []string{"abcde", "fghij", "kl"}},
		{"runes not bytes", "ééééé ééééé", 5, []string{"ééééé", "ééééé"}},
		{"paragraph however early", "a\n\nbbbb cccc dddd", 12, []string{"a", "bbbb cccc", "dddd"}},
		{"zero max means 4096", strings.Repeat("x", 4097), 0, []string{strings.Repeat("x", 4096), "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := whatsapp.Split(tt.text, tt.max)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("Split(%q, %d) = %q, want %q", tt.text, tt.max, got, tt.want)
			}
		})
	}
}

func TestSplitLongReply(t *testing.T) {
	para := strings.TrimSpace(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40))
	text := strings.Repeat(para+"\n\n", 12)
	parts := whatsapp.Split(text, whatsapp.MaxTextLength)
	if len(parts) < 2 {
		t.Fatalf("got %d parts", len(parts))
	}
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > whatsapp.MaxTextLength {
			t.Errorf("part %d has %d characters", i, n)
		}
		if !strings.HasSuffix(p, ".") {
			t.Errorf("part %d was not cut at a paragraph: ends %q", i, p[len(p)-10:])
		}
	}
}

// FuzzSplit checks that the parts fit, are not blank, and hold all of the
// text's non-space characters, in order.
func FuzzSplit(f *testing.F) {
	f.Add("hello world\n\nsecond paragraph\nline", 7)
	f.Add("ééé ééé", 2)
	f.Add("\n\n\n", 1)
	f.Fuzz(func(t *testing.T, text string, max int) {
		if max < 1 || max > 64 || !utf8.ValidString(text) {
			return
		}
		parts := whatsapp.Split(text, max)
		for _, p := range parts {
			if utf8.RuneCountInString(p) > max {
				t.Fatalf("part %q longer than %d", p, max)
			}
			if strings.TrimSpace(p) == "" {
				t.Fatalf("blank part in %q", parts)
			}
		}
		dropSpace := func(s string) string {
			return strings.Map(func(r rune) rune {
				if unicode.IsSpace(r) {
					return -1
				}
				return r
			}, s)
		}
		if got, want := dropSpace(strings.Join(parts, "")), dropSpace(text); got != want {
			t.Fatalf("parts %q lost text of %q", parts, text)
		}
	})
}
