package conversation

import (
	"encoding/binary"
	"unicode/utf8"
)

// validJSON reports whether b is valid JSON, exactly as json.Valid does
// (FuzzValidJSON holds the two together), in about a quarter of the time
// on a turn's content (BenchmarkValidJSON): a save checks every message's
// content and extra keys, and most of their bytes are in strings, which
// this crosses eight bytes at a time where encoding/json's scanner calls a
// state function per byte.
//
// Like json.Valid it accepts invalid UTF-8 inside strings (ValidateTurn
// checks UTF-8 itself) and refuses nesting deeper than 10,000 arrays and
// objects.
func validJSON(b []byte) bool {
	return scanJSON(b).valid
}

// jsonFacts is what scanJSON learns of a JSON text in its one pass.
// spaced and validUTF8 mean something only when valid is set.
type jsonFacts struct {
	valid     bool
	spaced    bool // white space outside strings: needsCompact(b)
	validUTF8 bool // utf8.Valid(b)
}

// scanJSON is validJSON that also reports, from the same pass, what a save
// needs to know of every content before it reads the blocks: whether
// compact would change it and whether it is valid UTF-8. That spares two
// more passes over the bytes (needsCompact, utf8.Valid). In valid JSON
// every byte outside a string is ASCII, and all white space outside
// strings is crossed by ws, so the validator's walk sees all it needs.
// FuzzValidJSON holds the facts to needsCompact and utf8.Valid.
func scanJSON(b []byte) jsonFacts {
	v := validator{b: b}
	i, ok := v.value(v.ws(0), 0)
	ok = ok && v.ws(i) == len(b)
	return jsonFacts{valid: ok, spaced: v.spaced, validUTF8: !v.badUTF8}
}

// maxNesting is encoding/json's limit on nested arrays and objects.
const maxNesting = 10000

// validator checks JSON by recursive descent, noting on the way whether
// it crossed white space between tokens and invalid UTF-8 in a string.
type validator struct {
	b       []byte
	spaced  bool
	badUTF8 bool
}

// ws returns the index of the first byte at or after i that is not JSON
// white space.
func (v *validator) ws(i int) int {
	for i < len(v.b) {
		switch v.b[i] {
		case ' ', '\t', '\n', '\r':
			i++
			v.spaced = true
		default:
			return i
		}
	}
	return i
}

// value checks the value at b[i], inside depth arrays and objects, and
// returns the index just past it.
func (v *validator) value(i, depth int) (int, bool) {
	b := v.b
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; c {
	case '"':
		return v.str(i)
	case '{':
		if depth >= maxNesting {
			return 0, false
		}
		i = v.ws(i + 1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			var ok bool
			if i, ok = v.str(i); !ok {
				return 0, false
			}
			if i = v.ws(i); i >= len(b) || b[i] != ':' {
				return 0, false
			}
			if i, ok = v.value(v.ws(i+1), depth+1); !ok {
				return 0, false
			}
			if i = v.ws(i); i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case '}':
				return i + 1, true
			case ',':
				i = v.ws(i + 1)
			default:
				return 0, false
			}
		}
	case '[':
		if depth >= maxNesting {
			return 0, false
		}
		i = v.ws(i + 1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = v.value(i, depth+1); !ok {
				return 0, false
			}
			if i = v.ws(i); i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case ']':
				return i + 1, true
			case ',':
				i = v.ws(i + 1)
			default:
				return 0, false
			}
		}
	case 't':
		return v.lit(i, "true")
	case 'f':
		return v.lit(i, "false")
	case 'n':
		return v.lit(i, "null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return v.number(i)
		}
		return 0, false
	}
}

func (v *validator) lit(i int, s string) (int, bool) {
	if len(v.b)-i >= len(s) && string(v.b[i:i+len(s)]) == s {
		return i + len(s), true
	}
	return 0, false
}

// str checks the string at b[i], a '"'. Bytes below 0x20 must be escaped;
// an escape is one of \" \\ \/ \b \f \n \r \t or \u and four hex digits.
func (v *validator) str(i int) (int, bool) {
	b := v.b
	for i++; i < len(b); i++ {
		// Eight plain bytes at a time: none a control character, a
		// quote or a backslash.
		for len(b)-i >= 8 && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		if c >= utf8.RuneSelf {
			// Eight bytes with a non-ASCII one end up here: check its
			// sequence, which holds no quote or backslash (those are
			// ASCII), and step over it.
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				v.badUTF8 = true
			}
			i += size - 1
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch c {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 {
					return 0, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		default: // a control character
			return 0, false
		}
	}
	return 0, false
}

// plain8 reports whether none of the eight bytes of x is below 0x20, a
// '"', a '\\' or beyond ASCII (the bit tricks of "Bit Twiddling Hacks", "Determine if a
// word has a byte less than n"; they may report a byte that is not there,
// never miss one, and a false report only costs the byte-by-byte loop).
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	// A byte below 0x20 borrows into its high bit when 0x20 is taken
	// from it; a byte beyond ASCII has its high bit set already.
	return (x-0x20*ones|x)&highs|zero(x^'"'*ones)|zero(x^'\\'*ones) == 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i].
func (v *validator) number(i int) (int, bool) {
	b := v.b
	digits := func(i int) (int, bool) {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return 0, false
	}
	var ok bool
	if b[i] == '0' {
		i++
	} else if i, ok = digits(i); !ok {
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return 0, false
		}
	}
	return i, true
}
