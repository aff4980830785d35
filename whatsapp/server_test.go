package whatsapp_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/whatsapp"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// TestNewRefusesIncompleteConfig: NewClient and NewServer name what the
// configuration lacks, and the Server fails closed without an app secret.
func TestNewRefusesIncompleteConfig(t *testing.T) {
	good := func() whatsapp.Config {
		return whatsapp.Config{AccessToken: "t", PhoneNumberID: "1", AppSecret: "s", Logger: quiet}
	}
	// serve makes a Client of cfg, and its Server on a Queue (none when
	// noQueue is set).
	serve := func(cfg whatsapp.Config, noQueue bool) error {
		c, err := whatsapp.NewClient(cfg)
		if err != nil {
			return err
		}
		if noQueue {
			_, err = whatsapp.NewServer(c, nil, nil)
			return err
		}
		pipe := delivery.New(stage{client: c, resp: &recorder{}}, &delivery.Options{Inbox: &delivery.Volatile{}, Logger: quiet})
		defer pipe.Shutdown(t.Context())
		_, err = whatsapp.NewServer(c, pipe, nil)
		return err
	}
	if err := serve(good(), false); err != nil {
		t.Fatalf("a complete config: %v", err)
	}
	tests := []struct {
		name    string
		change  func(*whatsapp.Config)
		noQueue bool
		want    string
	}{
		{"no app secret", func(c *whatsapp.Config) { c.AppSecret = "" }, false, "app secret"},
		{"no access token", func(c *whatsapp.Config) { c.AccessToken = "" }, false, "access token"},
		{"no phone number id", func(c *whatsapp.Config) { c.PhoneNumberID = "" }, false, "phone number id"},
		{"no queue", func(*whatsapp.Config) {}, true, "queue"},
		{"bad version", func(c *whatsapp.Config) { c.APIVersion = "21" }, false, "version"},
		{"bad base URL", func(c *whatsapp.Config) { c.BaseURL = "graph.facebook.com" }, false, "base URL"},
		{"bad family phone", func(c *whatsapp.Config) { c.Family = map[string]string{"mum": "Mum"} }, false, "family"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good()
			tt.change(&cfg)
			if err := serve(cfg, tt.noQueue); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error about %q", err, tt.want)
			}
		})
	}
}

func TestAllowUnsigned(t *testing.T) {
	h := newHarness(t, func(c *setup) { c.AppSecret, c.AllowUnsigned = "", true })
	if !strings.Contains(h.logs.String(), "INSECURE") {
		t.Error("running without signature checks was not logged loudly")
	}
	if code := h.postSigned(text(sheenaWaID, "wamid.unsigned", "hi"), ""); code != http.StatusOK {
		t.Fatalf("unsigned delivery in development mode: status %d", code)
	}
	h.shutdown()
	if got := h.bodies(); !slices.Equal(got, []string{"echo: hi"}) {
		t.Errorf("sent %q", got)
	}
}

func TestVerificationHandshake(t *testing.T) {
	tests := []struct {
		name  string
		query url.Values
		token string // the configured verify token
		code  int
	}{
		{"good", url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {verifyToken}, "hub.challenge": {"1158201444"}}, verifyToken, 200},
		{"wrong token", url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {verifyToken + "x"}, "hub.challenge": {"1158201444"}}, verifyToken, 403},
		{"wrong mode", url.Values{"hub.mode": {"unsubscribe"}, "hub.verify_token": {verifyToken}, "hub.challenge": {"1158201444"}}, verifyToken, 403},
		{"no challenge", url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {verifyToken}}, verifyToken, 403},
		{"nothing", url.Values{}, verifyToken, 403},
		{"no token configured", url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {""}, "hub.challenge": {"1"}}, "", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *setup) { c.VerifyToken = tt.token })
			w := h.do(httptest.NewRequest(http.MethodGet, "/webhook?"+tt.query.Encode(), nil))
			if w.Code != tt.code {
				t.Fatalf("status %d, want %d", w.Code, tt.code)
			}
			if tt.code == 200 && w.Body.String() != tt.query.Get("hub.challenge") {
				t.Errorf("body %q, want the challenge", w.Body.String())
			}
		})
	}
}

func TestRefusedDeliveries(t *testing.T) {
	body := text(sheenaWaID, "wamid.refused", "hi")
	big := append(bytes.Repeat([]byte(" "), whatsapp.MaxBodyBytes), body...)
	tests := []struct {
		name string
		req  func() *http.Request
		code int
	}{
		{"missing signature", func() *http.Request { return signed(body, "") }, http.StatusUnauthorized},
		{"bad signature", func() *http.Request {
			return signed(body, graphtest.Sign([]byte("another secret"), body))
		}, http.StatusForbidden},
		{"signature of another body", func() *http.Request {
			return signed(body, graphtest.Sign([]byte(appSecret), append(body, ' ')))
		}, http.StatusForbidden},
		{"malformed signature", func() *http.Request { return signed(body, "sha256=nothex") }, http.StatusForbidden},
		{"too large", func() *http.Request { return signed(big, graphtest.Sign([]byte(appSecret), big)) }, http.StatusRequestEntityTooLarge},
		{"too large, no length", func() *http.Request {
			r := signed(big, graphtest.Sign([]byte(appSecret), big))
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(big)), -1
			return r
		}, http.StatusRequestEntityTooLarge},
		{"malformed JSON", func() *http.Request {
			b := []byte(`{"object":"whatsapp_business_account","entry":[`)
			return signed(b, graphtest.Sign([]byte(appSecret), b))
		}, http.StatusBadRequest},
		{"wrong shape", func() *http.Request {
			b := []byte(`{"object":"whatsapp_business_account","entry":{"id":1}}`)
			return signed(b, graphtest.Sign([]byte(appSecret), b))
		}, http.StatusBadRequest},
		{"wrong method", func() *http.Request { return httptest.NewRequest(http.MethodPut, "/webhook", nil) }, http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if w := h.do(tt.req()); w.Code != tt.code {
				t.Errorf("status %d, want %d", w.Code, tt.code)
			}
			h.shutdown()
			if n := len(h.resp.inbound()); n != 0 {
				t.Errorf("%d messages processed", n)
			}
			if n := h.graph.Attempts(); n != 0 {
				t.Errorf("%d messages sent", n)
			}
		})
	}
}

func signed(body []byte, signature string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	if signature != "" {
		r.Header.Set(whatsapp.SignatureHeader, signature)
	}
	return r
}

func TestMessageTypes(t *testing.T) {
	photo := []byte("\xff\xd8\xff\xe0 a tiny jpeg")
	unsupported := apology.Unsupported
	tests := []struct {
		file  string
		text  string // what the responder gets; "" when it is not called
		reply string // the start of the reply sent
	}{
		{"text.json", "Does it come in another color?", "echo: Does it come in another color?"},
		{"image.json", "What plant is this?", "echo: What plant is this?"},
		{"interactive_button_reply.json", "Change", "echo: Change"},
		{"interactive_list_reply.json", "Priority Mail Express", "echo: Priority Mail Express"},
		{"button.json", "No", "echo: No"},
		{"unsupported.json", "", ""}, // an edit notice: no reply
		{"unsupported_type.json", "", unsupported},
		{"statuses.json", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			h := newHarness(t)
			h.graph.AddMedia("1003383421387256", photo, "image/jpeg")
			h.postFile(tt.file)
			h.shutdown()
			got := h.resp.inbound()
			if tt.text == "" {
				if len(got) != 0 {
					t.Errorf("responder called with %+v", got)
				}
			} else {
				if len(got) != 1 {
					t.Fatalf("responder called %d times", len(got))
				}
				in := got[0]
				if in.Text != tt.text || in.From != sheena || in.Name != "Sheena" || in.ProfileName != "Sheena Nelson" {
					t.Errorf("inbound text, from, name, profile = %q, %q, %q, %q", in.Text, in.From, in.Name, in.ProfileName)
				}
				if !strings.HasPrefix(in.ID, "wamid.") || in.Time.IsZero() {
					t.Errorf("inbound id, time = %q, %v", in.ID, in.Time)
				}
				if tt.file == "image.json" {
					if !bytes.Equal(in.Image, photo) || in.ImageType != "image/jpeg" {
						t.Errorf("image %q (%s), want the photo", in.Image, in.ImageType)
					}
				} else if in.Image != nil {
					t.Errorf("an image with a %s", tt.file)
				}
			}
			sent := h.graph.Sent()
			if tt.reply == "" {
				if len(sent) != 0 {
					t.Errorf("sent %+v", sent)
				}
				return
			}
			if len(sent) != 1 || !strings.HasPrefix(sent[0].Body, tt.reply) || sent[0].To != sheenaWaID || sent[0].PreviewURL {
				t.Errorf("sent %+v, want %q to %s", sent, tt.reply, sheenaWaID)
			}
		})
	}
}

func TestConfigLogValueHidesSecrets(t *testing.T) {
	var buf syncBuffer
	cfg := whatsapp.Config{AccessToken: "EAAtok", AppSecret: "sec", VerifyToken: "ver", PhoneNumberID: "106"}
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "whatsapp", cfg)
	out := buf.String()
	for _, secret := range []string{"EAAtok", "sec\"", "ver\""} {
		if strings.Contains(out, secret) {
			t.Errorf("secret %q logged: %s", secret, out)
		}
	}
	if !strings.Contains(out, `"access_token":"set"`) || !strings.Contains(out, `"phone_number_id":"106"`) {
		t.Errorf("config logged as %s", out)
	}
}
