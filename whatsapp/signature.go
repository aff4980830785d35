package whatsapp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// SignatureHeader is the header in which Meta signs every webhook delivery.
const SignatureHeader = "X-Hub-Signature-256"

const signaturePrefix = "sha256="

// ValidSignature reports whether header is the signature of body with the
// app secret. It compares in constant time and is false for an empty secret,
// so a server without a secret never accepts a delivery by accident.
func ValidSignature(secret, body []byte, header string) bool {
	if len(secret) == 0 {
		return false
	}
	hexSum, ok := strings.CutPrefix(header, signaturePrefix)
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}
