package phone

import (
	"errors"
	"fmt"
	"strings"
)

// The bounds of an E.164 number's digits, country code included.
const (
	MinDigits = 8
	MaxDigits = 15
)

// Errors returned by [Normalize] and [International]; the errors returned
// wrap one of them and say what is wrong, without repeating the number.
var (
	// ErrInvalid means the text is not a phone number: a character other
	// than digits, a leading "+", spaces, dashes, dots and brackets, or a
	// number of digits E.164 does not allow.
	ErrInvalid = errors.New("not a phone number")
	// ErrNoCountryCode means a number written for good (see
	// [International]) does not start with "+" and its country code.
	ErrNoCountryCode = errors.New("no country code")
)

// Normalize returns s in E.164 form, "+" and digits, dropping the spaces,
// dashes, dots and brackets people write: "+1 (631) 555-1181", the wa_id
// "16315551181" and "+16315551181" all give "+16315551181". A leading "+"
// is optional, since WhatsApp reports senders without it. It returns an
// error wrapping [ErrInvalid] when s holds anything else, or when its
// digits are not 8 to 15 with a first digit other than 0.
func Normalize(s string) (string, error) {
	var b strings.Builder
	b.Grow(len(s) + 1)
	b.WriteByte('+')
	digits, plus := 0, false
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			if digits == 0 && r == '0' {
				return "", fmt.Errorf("phone: %w: a country code does not start with 0", ErrInvalid)
			}
			digits++
			if digits > MaxDigits {
				return "", fmt.Errorf("phone: %w: more than %d digits", ErrInvalid, MaxDigits)
			}
			b.WriteRune(r)
		case r == '+' && digits == 0 && !plus:
			plus = true
		case r == ' ', r == '-', r == '.', r == '(', r == ')':
		default:
			return "", fmt.Errorf("phone: %w: only digits, a leading +, spaces, dashes, dots and brackets may be written", ErrInvalid)
		}
	}
	if digits < MinDigits {
		return "", fmt.Errorf("phone: %w: fewer than %d digits", ErrInvalid, MinDigits)
	}
	return b.String(), nil
}

// International is [Normalize] for a number written down for good, such
// as a family member's in the configuration: it must also start with "+"
// (after any spaces), so that a local number such as "(415) 555-1234",
// which Normalize would read as a number in another country, is refused
// with an error wrapping [ErrNoCountryCode].
func International(s string) (string, error) {
	n, err := Normalize(s)
	if err != nil {
		return "", err
	}
	if !strings.Contains(s, "+") { // Normalize allows one, before the digits
		return "", fmt.Errorf("phone: %w", ErrNoCountryCode)
	}
	return n, nil
}

// Digits returns n, a number in the form [Normalize] returns, without its
// "+": the form of WhatsApp's ids (wa_id) and of the recipient the Cloud
// API sends to, so that a number is normalised once and both forms come
// from it.
func Digits(n string) string {
	return strings.TrimPrefix(n, "+")
}

// Mask returns s with all but its last four characters hidden, for logs
// and listings: "+14155551234" becomes "+*******1234". A leading "+" is
// kept; a text of four characters or fewer is hidden whole. It takes any
// text, so that whatever a log line is about never shows in full.
func Mask(s string) string {
	r := []rune(s)
	if len(r) <= 4 {
		return strings.Repeat("*", len(r))
	}
	start := 0
	if r[0] == '+' {
		start = 1
	}
	for i := start; i < len(r)-4; i++ {
		r[i] = '*'
	}
	return string(r)
}
