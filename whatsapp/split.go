package whatsapp

import (
	"unicode"
	"unicode/utf16"
)

// MaxTextLength is the most characters WhatsApp accepts in the body of one
// text message. Clients count them in UTF-16 code units, as JavaScript and
// Java do, where a character outside the Basic Multilingual Plane (most
// emoji) counts two.
const MaxTextLength = 4096

// runeLen16 returns r's length in UTF-16 code units, as WhatsApp counts
// it: "é" is 1 and "😀" is 2, never less than 1, so a text that fits by
// this measure fits by a count of code points too.
func runeLen16(r rune) int {
	if n := utf16.RuneLen(r); n > 0 {
		return n
	}
	return 1 // invalid UTF-8 or a surrogate code point, sent as U+FFFD
}

// Split cuts text into parts of at most max characters each, counted as
// WhatsApp counts them (UTF-16 code units), to be sent as consecutive
// messages. It cuts at the last paragraph break (a blank line) that fits,
// else at the last line break, else at the last white space, and only cuts
// inside a word when a word is longer than max. A cut inside a word never
// separates a character from the combining marks, joiners or variation
// selectors that follow it (unless that one cluster is longer than max),
// and never splits a character: a surrogate pair stays whole. White space
// around the cuts is dropped; empty text gives no parts. max < 1 means
// [MaxTextLength]. A part holds at least one character, so with max 1 a
// character that counts two is a part of its own.
func Split(text string, max int) []string {
	if max < 1 {
		max = MaxTextLength
	}
	var parts []string
	rest := trimSpace([]rune(text))
	for len(rest) > 0 {
		fit := fitting(rest, max)
		if fit == len(rest) {
			parts = append(parts, string(rest))
			break
		}
		cut, next := cutPoint(rest[:fit+1], fit)
		if part := trimSpace(rest[:cut]); len(part) > 0 {
			parts = append(parts, string(part))
		}
		rest = trimSpace(rest[next:])
	}
	return parts
}

// fitting returns how many of the runes of text fit in max UTF-16 code
// units; at least one.
func fitting(text []rune, limit int) int {
	n := 0
	for i, r := range text {
		n += runeLen16(r)
		if n > limit {
			return max(i, 1)
		}
	}
	return len(text)
}

// cutPoint chooses where to end a part of at most max runes. window holds
// max+1 runes so that a break right after the last rune that fits counts.
// It returns the end of the part and the start of the remainder.
func cutPoint(window []rune, max int) (cut, next int) {
	// A paragraph break: "\n", optional horizontal space, "\n".
	for i := max; i > 0; i-- {
		if window[i] != '\n' {
			continue
		}
		j := i - 1
		for j > 0 && (window[j] == ' ' || window[j] == '\t' || window[j] == '\r') {
			j--
		}
		if j > 0 && window[j] == '\n' {
			return j, i + 1
		}
	}
	for i := max; i > 0; i-- {
		if window[i] == '\n' {
			return i, i + 1
		}
	}
	for i := max; i > 0; i-- {
		if unicode.IsSpace(window[i]) {
			return i, i + 1
		}
	}
	// Inside a word: step back to the start of the character cluster
	// that straddles the limit, if the window holds anything before it.
	for i := max; i > 0; i-- {
		if !joined(window, i) {
			return i, i
		}
	}
	return max, max
}

// joined reports whether text[i] belongs to the same user-perceived
// character as text[i-1], by the simple rules that cover most text:
// combining marks, variation selectors, emoji modifiers and tag characters
// extend the character before them, a zero-width joiner glues its
// neighbours, and regional indicators (flags) go in pairs.
func joined(text []rune, i int) bool {
	r, prev := text[i], text[i-1]
	switch {
	case unicode.Is(unicode.M, r),
		r == '\u200d' || prev == '\u200d', // zero-width joiner
		r >= '\ufe00' && r <= '\ufe0f',    // variation selectors
		r >= 0xe0100 && r <= 0xe01ef,
		r >= 0x1f3fb && r <= 0x1f3ff, // skin tone modifiers
		r >= 0xe0020 && r <= 0xe007f: // tags, as in the flag of Scotland
		return true
	case isRegionalIndicator(r) && isRegionalIndicator(prev):
		// The second of a pair when an odd number of indicators run up to
		// it.
		n := 0
		for j := i - 1; j >= 0 && isRegionalIndicator(text[j]); j-- {
			n++
		}
		return n%2 == 1
	}
	return false
}

func isRegionalIndicator(r rune) bool { return r >= 0x1f1e6 && r <= 0x1f1ff }

// trimSpace returns text without its leading and trailing white space.
func trimSpace(text []rune) []rune {
	for len(text) > 0 && unicode.IsSpace(text[0]) {
		text = text[1:]
	}
	for len(text) > 0 && unicode.IsSpace(text[len(text)-1]) {
		text = text[:len(text)-1]
	}
	return text
}
