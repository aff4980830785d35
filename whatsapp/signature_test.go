package whatsapp_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mombot/mombot/whatsapp"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

func TestValidSignature(t *testing.T) {
	secret, body := []byte("app-secret"), []byte(`{"object":"whatsapp_business_account"}`)
	good := graphtest.Sign(secret, body)
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
		{"no secret", nil, body, graphtest.Sign(nil, body), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := whatsapp.ValidSignature(tt.secret, tt.body, tt.header); got != tt.want {
				t.Errorf("ValidSignature = %v, want %v", got, tt.want)
			}
		})
	}
}

// signatureCorpus is the seed corpus of FuzzValidSignature in
// testdata/fuzz, built from the sample payloads: each signed with a
// secret, and the text message also with the mistakes a sender or an
// attacker makes. Keys are file names.
func signatureCorpus(t *testing.T) map[string]string {
	t.Helper()
	samples, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no sample payloads: %v", err)
	}
	entry := func(secret, body []byte, header string) string {
		return fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\nstring(%q)\n", secret, body, header)
	}
	secret := []byte("meta-app-secret-4f1c")
	corpus := map[string]string{}
	for _, path := range samples {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := "sample_" + strings.TrimSuffix(filepath.Base(path), ".json")
		good := graphtest.Sign(secret, body)
		corpus[name] = entry(secret, body, good)
		if filepath.Base(path) != "text.json" {
			continue
		}
		hexSum := strings.TrimPrefix(good, "sha256=")
		corpus[name+"_uppercase_hex"] = entry(secret, body, "sha256="+strings.ToUpper(hexSum))
		corpus[name+"_sha1_prefix"] = entry(secret, body, "sha1="+hexSum)
		corpus[name+"_no_prefix"] = entry(secret, body, hexSum)
		corpus[name+"_truncated"] = entry(secret, body, good[:len(good)-2])
		corpus[name+"_body_reformatted"] = entry(secret, bytes.TrimSpace(body), good)
		corpus[name+"_other_secret"] = entry([]byte("another-secret"), body, good)
		corpus[name+"_no_secret"] = entry(nil, body, graphtest.Sign(nil, body))
	}
	return corpus
}

// TestFuzzValidSignatureCorpus checks that testdata/fuzz/FuzzValidSignature
// is the corpus built from the sample payloads, so that it follows them;
// MOMBOT_UPDATE_FUZZ_CORPUS=1 rewrites it.
func TestFuzzValidSignatureCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzValidSignature")
	want := signatureCorpus(t)
	if os.Getenv("MOMBOT_UPDATE_FUZZ_CORPUS") == "1" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range want {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != data {
			t.Errorf("seed %s is missing or stale (run with MOMBOT_UPDATE_FUZZ_CORPUS=1): %v", name, err)
		}
	}
}

// FuzzValidSignature checks the signature check against its definition:
// a header is accepted exactly when it is "sha256=" and the hex HMAC of the
// body with a non-empty secret, and Sign's output is always accepted.
func FuzzValidSignature(f *testing.F) {
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	f.Add([]byte("app-secret"), body, graphtest.Sign([]byte("app-secret"), body))
	f.Add([]byte("app-secret"), body, "sha256=")
	f.Add([]byte(""), body, graphtest.Sign(nil, body))
	f.Add([]byte("k"), []byte{}, "sha256=00")
	f.Fuzz(func(t *testing.T, secret, body []byte, header string) {
		got := whatsapp.ValidSignature(secret, body, header)
		want := len(secret) > 0 && strings.EqualFold(header, graphtest.Sign(secret, body)) &&
			strings.HasPrefix(header, "sha256=")
		if got != want {
			t.Errorf("ValidSignature(%q, %q, %q) = %v, want %v", secret, body, header, got, want)
		}
		if len(secret) > 0 && !whatsapp.ValidSignature(secret, body, graphtest.Sign(secret, body)) {
			t.Errorf("Sign's own signature refused")
		}
	})
}
