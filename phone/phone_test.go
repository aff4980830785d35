package phone_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mombot/mombot/phone"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		in, want string
		err      error
	}{
		{"16505551234", "+16505551234", nil},
		{"+1 (650) 555-1234", "+16505551234", nil},
		{"+44.20.7946.0000", "+442079460000", nil},
		{"+4912345678", "+4912345678", nil},           // 10 digits
		{"+12345678", "+12345678", nil},               // 8 digits, the fewest
		{"+123456789012345", "+123456789012345", nil}, // 15 digits, the most
		{"+1234567", "", phone.ErrInvalid},            // 7 digits
		{"+1234567890123456", "", phone.ErrInvalid},   // 16 digits
		{"+0 415 555 1234", "", phone.ErrInvalid},     // a country code starts with 1-9
		{"", "", phone.ErrInvalid},
		{"+", "", phone.ErrInvalid},
		{"1+2", "", phone.ErrInvalid},
		{"12a", "", phone.ErrInvalid},
		{"١٢٣٤٥٦٧٨٩", "", phone.ErrInvalid}, // Arabic-Indic digits are not wa_id digits
		{"system", "", phone.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := phone.Normalize(tt.in)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("Normalize(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), tt.in) && tt.in != "" && tt.in != "+" {
				t.Errorf("the error repeats the number: %v", err)
			}
			if again, err2 := phone.Normalize(got); err == nil && (again != got || err2 != nil) {
				t.Errorf("Normalize(%q) = %q, %v; want its own result unchanged", got, again, err2)
			}
		})
	}
}

func TestInternational(t *testing.T) {
	tests := []struct {
		in, want string
		err      error
	}{
		{"+1 (415) 555-1234", "+14155551234", nil},
		{" +14155551234", "+14155551234", nil},
		// Without its "+" a number may lack its country code: (415)
		// 555-1234 would otherwise be +4155551234, in Switzerland.
		{"(415) 555-1234", "", phone.ErrNoCountryCode},
		{"14155551234", "", phone.ErrNoCountryCode},
		{"ext 12", "", phone.ErrInvalid},
		{"", "", phone.ErrInvalid},
	}
	for _, tt := range tests {
		got, err := phone.International(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("International(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestMask(t *testing.T) {
	for s, want := range map[string]string{
		"+14155551234": "+*******1234",
		"14155551234":  "*******1234",
		"123":          "***",
		"":             "",
		"+1234":        "+1234"[:1] + "1234",
	} {
		if got := phone.Mask(s); got != want {
			t.Errorf("Mask(%q) = %q, want %q", s, got, want)
		}
	}
}

func ExampleNormalize() {
	for _, s := range []string{"+1 (415) 555-1234", "14155551234", "415-1234"} {
		n, err := phone.Normalize(s)
		fmt.Println(n, err)
	}
	// Output:
	// +14155551234 <nil>
	// +14155551234 <nil>
	//  phone: not a phone number: fewer than 8 digits
}

func ExampleMask() {
	fmt.Println(phone.Mask("+14155551234"))
	// Output: +*******1234
}

// Digits is the wa_id of a normalised number: the reply goes where the
// family check looked.
func TestDigits(t *testing.T) {
	for _, in := range []string{"+1 (631) 555-1181", "16315551181", "+16315551181", "1-631-555-1181"} {
		n, err := phone.Normalize(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := phone.Digits(n); got != "16315551181" {
			t.Errorf("Digits(Normalize(%q)) = %q, want 16315551181", in, got)
		}
	}
}
