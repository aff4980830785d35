package whatsapp_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
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
		{"emoji count two", "😀😀😀 😀😀", 6, []string{"😀😀😀", "😀😀"}},
		{"emoji not halved", "😀😀😀😀", 5, []string{"😀😀", "😀😀"}},
		{"a character longer than max", "😀a", 1, []string{"😀", "a"}},
		{"combining mark kept", "e\u0301e\u0301e\u0301", 3, []string{"e\u0301", "e\u0301", "e\u0301"}},
		{"flags in pairs", "🇫🇷🇩🇪🇮🇹", 6, []string{"🇫🇷", "🇩🇪", "🇮🇹"}},
		{"joiner sequence kept", "ab👩\u200d👩\u200d👧", 6, []string{"ab", "👩\u200d👩\u200d", "👧"}},
		{"skin tone kept", "👍🏽👍🏽", 5, []string{"👍🏽", "👍🏽"}},
		{"variation selector kept", "❤\ufe0f❤\ufe0f", 3, []string{"❤\ufe0f", "❤\ufe0f"}},
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
		if n := utf16Len(p); n > whatsapp.MaxTextLength {
			t.Errorf("part %d has %d characters", i, n)
		}
		if !strings.HasSuffix(p, ".") {
			t.Errorf("part %d was not cut at a paragraph: ends %q", i, p[len(p)-10:])
		}
	}
}

// utf16Len counts s as the Cloud API does, in UTF-16 code units, with
// invalid UTF-8 sent as U+FFFD: the tests' own count, apart from the
// package's.
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

func TestSplitCountsUTF16Units(t *testing.T) {
	// Each text is exactly this long as the Cloud API counts it, so it
	// fits one part of that length, and a text of several characters no
	// shorter one.
	tests := map[string]int{
		"hello":           5,
		"é":               1,
		"e\u0301":         2,
		"😀":               2,
		"👩\u200d👩\u200d👧": 8,
	}
	for s, want := range tests {
		if got := utf16Len(s); got != want {
			t.Errorf("%q is %d UTF-16 units, the table says %d", s, got, want)
		}
		if parts := whatsapp.Split(s, want); len(parts) != 1 || parts[0] != s {
			t.Errorf("Split(%q, %d) = %q, want it whole", s, want, parts)
		}
		if utf8.RuneCountInString(s) > 1 {
			if parts := whatsapp.Split(s, want-1); len(parts) < 2 {
				t.Errorf("Split(%q, %d) = %q, want it cut", s, want-1, parts)
			}
		}
	}
}

// FuzzSplit checks that the parts fit in max UTF-16 code units (but for a
// part of one character, when max is 1); that they are the text's own
// substrings, in order, with only white space between them; that a cut
// inside a word comes only where the part before it has no white space;
// and that such a cut separates a combining mark, joiner or variation
// selector from its character only when that one cluster is longer than
// max.
func FuzzSplit(f *testing.F) {
	f.Add("hello world\n\nsecond paragraph\nline", 7)
	f.Add("ééé ééé", 2)
	f.Add("\n\n\n", 1)
	f.Add("😀😀😀 😀😀", 3)
	f.Add("e\u0301e\u0301\u0302e\u0301 x", 3)
	f.Add("🇫🇷🇩🇪🇮🇹🇪", 3)
	f.Add("ab👩\u200d👩\u200d👧 c", 4)
	f.Fuzz(func(t *testing.T, text string, max int) {
		if max < 1 || max > 64 || !utf8.ValidString(text) {
			return
		}
		parts := whatsapp.Split(text, max)
		pos, prevEnd := 0, -1
		for k, p := range parts {
			if !utf8.ValidString(p) {
				t.Fatalf("part %q is not valid UTF-8", p)
			}
			if n := utf16Len(p); n > max && utf8.RuneCountInString(p) > 1 {
				t.Fatalf("part %q is %d long, more than %d", p, n, max)
			}
			if strings.TrimSpace(p) == "" {
				t.Fatalf("blank part in %q", parts)
			}
			i := strings.Index(text[pos:], p)
			if i < 0 {
				t.Fatalf("part %q is not in what remains of the text after %q", p, parts[:k])
			}
			if gap := text[pos : pos+i]; strings.TrimSpace(gap) != "" {
				t.Fatalf("text %q between parts was lost", gap)
			}
			start := pos + i
			if k > 0 && start == prevEnd {
				checkWordCut(t, parts[k-1], p)
			}
			pos = start + len(p)
			prevEnd = pos
		}
		if strings.TrimSpace(text[pos:]) != "" {
			t.Fatalf("the end of the text, %q, was lost", text[pos:])
		}
	})
}

// checkWordCut checks a cut inside a word, between the parts prev and
// next.
func checkWordCut(t *testing.T, prev, next string) {
	t.Helper()
	if strings.IndexFunc(prev, unicode.IsSpace) >= 0 {
		t.Fatalf("cut inside a word after %q, which had white space to cut at", prev)
	}
	last, _ := utf8.DecodeLastRuneInString(prev)
	first, _ := utf8.DecodeRuneInString(next)
	if !unicode.Is(unicode.M, first) && !unicode.Is(unicode.Variation_Selector, first) && first != '\u200d' && last != '\u200d' {
		return
	}
	// The cut separates first from its character: only right when prev
	// is that one cluster, too long to fit.
	r := []rune(prev)
	for i := 1; i < len(r); i++ {
		if !whatsapp.Joined(r, i) {
			t.Fatalf("%q cut from %q, which has an earlier place to cut before %q", next, prev, string(r[i:]))
		}
	}
}
