package whatsapp_test

import (
	"strings"
	"testing"

	"github.com/mombot/mombot/whatsapp"
)

func TestValidSignature(t *testing.T) {
	secret, body := []byte("app-secret"), []byte(`{"object":"whatsapp_business_account"}`)
	good := whatsapp.Sign(secret, body)
	tests := []struct {
		name   string
		secret []byte
		body   []byte
		header string
		want   bool
	}{
		{"good", secret, body, good, true},
		{"upper-case hex", secret, body, "sha256=" + strings.ToUpper(strings.TrimPrefix(good, "sha256=")), true},
		{"empty header", secret, body, "", false},
		{"no prefix", secret, body, strings.TrimPrefix(good, "sha256="), false},
		{"sha1", secret, body, "sha1=" + strings.TrimPrefix(good, "sha256="), false},
		{"not hex", secret, body, "sha256=zz", false},
		{"short", secret, body, good[:len(good)-2], false},
		{"other body", secret, append(body, ' '), good, false},
		{"other secret", []byte("app-secreT"), body, good, false},
		{"no secret", nil, body, whatsapp.Sign(nil, body), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := whatsapp.ValidSignature(tt.secret, tt.body, tt.header); got != tt.want {
				t.Errorf("ValidSignature = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzValidSignature checks the signature check against its definition:
// a header is accepted exactly when it is "sha256=" and the hex HMAC of the
// body with a non-empty secret, and Sign's output is always accepted.
func FuzzValidSignature(f *testing.F) {
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	f.Add([]byte("app-secret"), body, whatsapp.Sign([]byte("app-secret"), body))
	f.Add([]byte("app-secret"), body, "sha256=")
	f.Add([]byte(""), body, whatsapp.Sign(nil, body))
	f.Add([]byte("k"), []byte{}, "sha256=00")
	f.Fuzz(func(t *testing.T, secret, body []byte, header string) {
		got := whatsapp.ValidSignature(secret, body, header)
		want := len(secret) > 0 && strings.EqualFold(header, whatsapp.Sign(secret, body)) &&
			strings.HasPrefix(header, "sha256=")
		if got != want {
			t.Errorf("ValidSignature(%q, %q, %q) = %v, want %v", secret, body, header, got, want)
		}
		if len(secret) > 0 && !whatsapp.ValidSignature(secret, body, whatsapp.Sign(secret, body)) {
			t.Errorf("Sign's own signature refused")
		}
	})
}
