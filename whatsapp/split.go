package whatsapp

import (
	"strings"
	"unicode"
)

// MaxTextLength is the most characters (Unicode code points) WhatsApp
// accepts in the body of one text message.
const MaxTextLength = 4096

// Split cuts text into parts of at most max characters (runes) each, to be
// sent as consecutive messages. It cuts at the last paragraph break (a blank
// line) that fits, else at the last line break, else at the last white
// space, and only cuts inside a word when a word is longer than max. White
// space around the cuts is dropped; empty text gives no parts. max < 1
// means [MaxTextLength].
func Split(text string, max int) []string {
	if max < 1 {
		max = MaxTextLength
	}
	var parts []string
	rest := []rune(strings.TrimSpace(text))
	for len(rest) > max {
		cut, next := cutPoint(rest[:max+1], max)
		if part := strings.TrimRightFunc(string(rest[:cut]), unicode.IsSpace); part != "" {
			parts = append(parts, part)
		}
		rest = []rune(strings.TrimLeftFunc(string(rest[next:]), unicode.IsSpace))
	}
	if len(rest) > 0 {
		parts = append(parts, string(rest))
	}
	return parts
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
	return max, max
}
