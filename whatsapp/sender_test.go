package whatsapp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A delivery must name the business number it was sent to: one without
// metadata.phone_number_id, or with an empty one, is ignored like one to
// another number; the sender gets no answer and nothing is sent.
func TestMessageWithoutOurNumberIgnored(t *testing.T) {
	msg := textMessage(sheenaWaID, "wamid.nonumber", "hi", sampleTime.Add(-time.Second))
	tests := []struct {
		name     string
		metadata string // the value's "metadata" member, "" for none
	}{
		{"no metadata", ""},
		{"no phone_number_id", `"metadata":{"display_phone_number":"15550783881"},`},
		{"an empty phone_number_id", `"metadata":{"display_phone_number":"15550783881","phone_number_id":""},`},
		{"another number", `"metadata":{"display_phone_number":"15550783881","phone_number_id":"999999999999999"},`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{"messaging_product":"whatsapp",` +
				tt.metadata + `"contacts":[{"profile":{"name":"Sheena"},"wa_id":"` + sheenaWaID + `"}],"messages":[` + msg + `]}}]}]}`)
			if code := h.post(body); code != http.StatusOK {
				t.Fatalf("delivery: status %d, want 200 (acknowledged, then ignored)", code)
			}
			h.shutdown()
			if n := len(h.resp.inbound()); n != 0 {
				t.Errorf("%d messages answered, want none", n)
			}
			if n := h.graph.Attempts(); n != 0 {
				t.Errorf("%d messages sent, want none", n)
			}
			if !strings.Contains(h.logs.String(), "message to another business number, or to none, ignored") {
				t.Errorf("the log does not say why:\n%s", h.logs.String())
			}
		})
	}
}

// The sender's number is normalised once: "+1 555 000 0001" as "from" is
// the family's Ann, and the reply goes to the wa_id digits, 15550000001,
// not to the raw string.
func TestSenderNormalisedOnce(t *testing.T) {
	for _, from := range []string{"+1 555 000 0001", "1-555-000-0001", "15550000001"} {
		t.Run(from, func(t *testing.T) {
			h := newHarness(t)
			body := payload([]string{change(from, textMessage(from, "wamid.norm", "hi", sampleTime.Add(-time.Second)))})
			if code := h.post(body); code != http.StatusOK {
				t.Fatalf("delivery: status %d", code)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sent, err := h.graph.WaitSent(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := sent[0].To; got != "15550000001" {
				t.Errorf("the reply went to %q, want the wa_id digits 15550000001", got)
			}
			if in := h.resp.inbound(); len(in) != 1 || in[0].From != "+15550000001" || in[0].Name != "Ann" {
				t.Errorf("the assistant got %+v, want Ann at +15550000001", in)
			}
		})
	}
}

// The public /healthz says how the server is and nothing about the build,
// even when asked; the handler for the metrics port adds the version.
func TestHealthVerboseOnlyOffThePublicPort(t *testing.T) {
	h := newHarness(t)
	for _, path := range []string{"/healthz", "/healthz?verbose=1"} {
		w := h.do(httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK || w.Body.String() != "ok\n" {
			t.Errorf("public GET %s: %d %q, want 200 \"ok\\n\"", path, w.Code, w.Body.String())
		}
	}
	private := h.srv.HealthHandler("v1.4.0 (abc1234) go1.26.8")
	for path, want := range map[string]string{
		"/healthz":           "ok\n",
		"/healthz?verbose=1": "ok\nversion: v1.4.0 (abc1234) go1.26.8\n",
	} {
		w := httptest.NewRecorder()
		private.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK || w.Body.String() != want {
			t.Errorf("HealthHandler, GET %s: %d %q, want 200 %q", path, w.Code, w.Body.String(), want)
		}
	}
	h.shutdown()
	w := httptest.NewRecorder()
	private.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz?verbose=1", nil))
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("HealthHandler after Shutdown: %d, want 503", w.Code)
	}
}
