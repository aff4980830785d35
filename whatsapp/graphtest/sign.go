package graphtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Sign returns the X-Hub-Signature-256 value Meta sends with a webhook
// delivery of body when the app secret is secret: "sha256=" and the hex
// HMAC-SHA256 of the raw body. Tests sign the deliveries they post with
// it, as Meta signs the real ones.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
