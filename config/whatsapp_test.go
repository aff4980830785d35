package config

import (
	"strings"
	"testing"
	"time"
)

// allSecrets are the variables serve needs, each set.
func allSecrets() map[string]string {
	return map[string]string{
		"ANTHROPIC_API_KEY":        "sk-test",
		"WHATSAPP_ACCESS_TOKEN":    "token",
		"WHATSAPP_APP_SECRET":      "secret",
		"WHATSAPP_VERIFY_TOKEN":    "verify",
		"WHATSAPP_PHONE_NUMBER_ID": "111",
	}
}

// The file's settings come with the environment's secrets; the
// environment's number id and Graph URL win over the file's.
func TestWhatsAppConfig(t *testing.T) {
	c, err := Load(writeConfig(t, `{"family": {"+14155551234": {"name": "Erin"}}, "whatsapp": {"phone_number_id": "999", "graph_version": "v22.0", "graph_url": "http://file", "max_age": "2h"}}`))
	if err != nil {
		t.Fatal(err)
	}
	env := allSecrets()
	env["WHATSAPP_GRAPH_URL"] = " http://env "
	w, err := c.WhatsAppConfig(func(k string) string { return env[k] }, WhatsAppOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.AccessToken != "token" || w.AppSecret != "secret" || w.VerifyToken != "verify" || w.AllowUnsigned {
		t.Errorf("secrets %q %q %q, unsigned %v", w.AccessToken, w.AppSecret, w.VerifyToken, w.AllowUnsigned)
	}
	if w.PhoneNumberID != "111" || w.BaseURL != "http://env" || w.APIVersion != "v22.0" || w.MaxAge != 2*time.Hour || w.Family["+14155551234"] != "Erin" {
		t.Errorf("settings: id %q, URL %q, version %q, max age %v, family %v", w.PhoneNumberID, w.BaseURL, w.APIVersion, w.MaxAge, w.Family)
	}
	delete(env, "WHATSAPP_PHONE_NUMBER_ID")
	if w, err := c.WhatsAppConfig(func(k string) string { return env[k] }, WhatsAppOptions{}); err != nil || w.PhoneNumberID != "999" {
		t.Errorf("without WHATSAPP_PHONE_NUMBER_ID: id %q, %v; want the file's 999", w.PhoneNumberID, err)
	}
}

// Every missing secret is named in one line, blank ones too; the app
// secret is not needed with insecure, which then allows unsigned
// deliveries, and only then.
func TestWhatsAppConfigMissing(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		unset    []string
		insecure bool
		want     string // in the error; "" for none
		unsigned bool
	}{
		{"all set", nil, false, "", false},
		{"all set, insecure: the secret is used", nil, true, "", false},
		{"no app secret", []string{"WHATSAPP_APP_SECRET"}, false, "WHATSAPP_APP_SECRET is not set (see docs/whatsapp.md). Without WHATSAPP_APP_SECRET anyone could post messages to the webhook (for local development only: --insecure-skip-signature)", false},
		{"no app secret, insecure", []string{"WHATSAPP_APP_SECRET"}, true, "", true},
		{"none", []string{"ANTHROPIC_API_KEY", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN", "WHATSAPP_PHONE_NUMBER_ID"}, false,
			"ANTHROPIC_API_KEY, WHATSAPP_ACCESS_TOKEN, WHATSAPP_APP_SECRET, WHATSAPP_VERIFY_TOKEN, WHATSAPP_PHONE_NUMBER_ID are not set", false},
		{"none, insecure", []string{"ANTHROPIC_API_KEY", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN", "WHATSAPP_PHONE_NUMBER_ID"}, true,
			"ANTHROPIC_API_KEY, WHATSAPP_ACCESS_TOKEN, WHATSAPP_VERIFY_TOKEN, WHATSAPP_PHONE_NUMBER_ID are not set (see docs/whatsapp.md)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := allSecrets()
			for i, k := range tt.unset {
				env[k] = strings.Repeat(" ", i%2) // blank is not set
			}
			w, err := c.WhatsAppConfig(func(k string) string { return env[k] }, WhatsAppOptions{SkipSignature: tt.insecure})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %q, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n")):
				t.Errorf("error %v, want one line with %q", err, tt.want)
			}
			if tt.insecure && err != nil && strings.Contains(err.Error(), "WHATSAPP_APP_SECRET") {
				t.Errorf("with insecure the app secret is not needed: %v", err)
			}
			if w.AllowUnsigned != tt.unsigned {
				t.Errorf("AllowUnsigned = %v, want %v", w.AllowUnsigned, tt.unsigned)
			}
		})
	}
}
