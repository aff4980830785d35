package conversation

import "encoding/binary"

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
	v := validator{b: b}
	i, ok := v.value(v.ws(0), 0)
	return ok && v.ws(i) == len(b)
}

// maxNesting is encoding/json's limit on nested arrays and objects.
const maxNesting = 10000

// validator checks JSON by recursive descent.
type validator struct{ b []byte }

// ws returns the index of the first byte at or after i that is not JSON
// white space.
func (v validator) ws(i int) int {
	for i < len(v.b) {
		switch v.b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value checks the value at b[i], inside depth arrays and objects, and
// returns the index just past it.
func (v validator) value(i, depth int) (int, bool) {
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

func (v validator) lit(i int, s string) (int, bool) {
	if len(v.b)-i >= len(s) && string(v.b[i:i+len(s)]) == s {
		return i + len(s), true
	}
	return 0, false
}

// str checks the string at b[i], a '"'. Bytes below 0x20 must be escaped;
// an escape is one of \" \\ \/ \b \f \n \r \t or \u and four hex digits.
func (v validator) str(i int) (int, bool) {
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
// '"' or a '\\' (the bit tricks of "Bit Twiddling Hacks", "Determine if a
// word has a byte less than n"; they may report a byte that is not there,
// never miss one, and a false report only costs the byte-by-byte loop).
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return (x-0x20*ones)&^x&highs|zero(x^'"'*ones)|zero(x^'\\'*ones) == 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i].
func (v validator) number(i int) (int, bool) {
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
