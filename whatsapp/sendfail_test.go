package whatsapp_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp"
)

// TestAnsweredIsLoggedOnceSent: "message answered" is logged after the
// reply reached the Graph API, never for a reply whose send failed, which
// is logged as not sent instead.
func TestAnsweredIsLoggedOnceSent(t *testing.T) {
	for _, tt := range []struct {
		name         string
		failures     int // sends the Graph API fails, with 500
		wantAnswered bool
		wantNotSent  bool
	}{
		{"sent", 0, true, false},
		{"every attempt fails", whatsapp.DefaultMaxAttempts, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.graph.FailNext(tt.failures, http.StatusInternalServerError)
			h.post(text(sheenaWaID, "wamid.log", "hello"))
			h.shutdown()
			logs := h.logs.String()
			if got := strings.Contains(logs, `msg="whatsapp: message answered"`); got != tt.wantAnswered {
				t.Errorf("logged \"message answered\": %v, want %v", got, tt.wantAnswered)
			}
			if got := strings.Contains(logs, `msg="whatsapp: reply not sent"`); got != tt.wantNotSent {
				t.Errorf("logged \"reply not sent\": %v, want %v", got, tt.wantNotSent)
			}
			if tt.wantAnswered && !strings.Contains(logs, "parts=1 reply_chars=11") {
				t.Errorf("\"message answered\" does not give the parts and characters sent:\n%s", logs)
			}
		})
	}
}

// TestShutdownDoesNotWaitToRetryASend: once Shutdown begins, a reply whose
// send failed is not retried after the backoff; it stays in the inbox, and
// the next start sends it, once it has waited (SendingGrace) for the
// holder that marked it as being sent. Shutdown returns without its
// context running out, although the backoff (at least 15 s here) is
// longer than the context allows.
func TestShutdownDoesNotWaitToRetryASend(t *testing.T) {
	h := newHarness(t, func(c *setup) { c.RetryDelay, c.SendingGrace = time.Hour, 10*time.Millisecond })
	h.graph.FailNext(1, http.StatusServiceUnavailable)
	if code := h.post(text(sheenaWaID, "wamid.retry", "still there?")); code != http.StatusOK {
		t.Fatalf("delivery: %d", code)
	}
	for deadline := time.Now().Add(10 * time.Second); h.graph.Attempts() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no send attempted")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.shut = true
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown waited for the retry's backoff: %v", err)
	}
	if n := h.graph.Attempts(); n != 1 {
		t.Errorf("%d send attempts before the shutdown ended, want 1", n)
	}
	if got := keys(t, openQueue(t, h.queuePath)); !slices.Equal(got, []string{sheena}) {
		t.Fatalf("senders queued after the shutdown: %q, want Sheena's unsent reply", got)
	}

	h.start()
	h.shutdown()
	if got, want := h.bodies(), []string{"echo: still there?"}; !slices.Equal(got, want) {
		t.Errorf("after the restart, sent %q, want %q", got, want)
	}
}
