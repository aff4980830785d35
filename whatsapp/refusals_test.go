package whatsapp_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/internal/logging"
	"github.com/mombot/mombot/whatsapp"
)

// A stranger's refused requests cannot fill the disk: the process logger
// cuts each value, and the server logs the first refusal of each kind in a
// minute and counts the rest, so that 20 refused GET
// /webhook?hub.mode=<1,000,000 bytes>, 20 deliveries without a signature
// and 20 with a bad one make a log of a few kilobytes: one line for each
// kind, and one count of the other 19 when the minute ends (here, at
// shutdown).
func TestRefusalsAreCountedInTheLog(t *testing.T) {
	logs := &syncBuffer{}
	h := newHarness(t, func(c *setup) {
		c.Logger = logging.New(logs, &logging.Options{Format: logging.Text})
	})
	mode := strings.Repeat("m", 1_000_000)
	body := text(sheenaWaID, "wamid.refused", "hi")
	for range 20 {
		q := url.Values{"hub.mode": {mode}, "hub.verify_token": {"guess"}, "hub.challenge": {"1"}}
		if w := h.do(httptest.NewRequest(http.MethodGet, "/webhook?"+q.Encode(), nil)); w.Code != http.StatusForbidden {
			t.Fatalf("verification: status %d", w.Code)
		}
		if w := h.do(signed(body, "")); w.Code != http.StatusUnauthorized {
			t.Fatalf("no signature: status %d", w.Code)
		}
		if w := h.do(signed(body, "sha256=00")); w.Code != http.StatusForbidden {
			t.Fatalf("bad signature: status %d", w.Code)
		}
	}
	kinds := []string{
		"whatsapp: webhook verification refused",
		"whatsapp: webhook delivery without a signature refused",
		"whatsapp: webhook delivery with a bad signature refused",
	}
	for _, k := range kinds {
		if n := strings.Count(logs.String(), `msg="`+k+`"`); n != 1 {
			t.Errorf("%d lines of %q during the minute, want 1", n, k)
		}
	}
	h.shutdown()
	written := logs.String()
	if len(written) > 16<<10 {
		t.Errorf("60 refused requests wrote %d bytes of log, want at most 16 KiB", len(written))
	}
	for _, k := range kinds {
		if !strings.Contains(written, `msg="`+k+`" repeated=19 within=1m0s`) {
			t.Errorf("no count of the other 19 of %q in the log:\n%s", k, written)
		}
	}
}

// Once the interval ends, the count is logged without waiting for another
// refusal, and the next refusal is logged whole again.
func TestRefusalCountAtTheIntervalsEnd(t *testing.T) {
	defer whatsapp.SetRefusalLogEvery(100 * time.Millisecond)()
	h := newHarness(t)
	body := text(sheenaWaID, "wamid.refused", "hi")
	for range 3 {
		h.do(signed(body, ""))
	}
	const line = `msg="whatsapp: webhook delivery without a signature refused"`
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(h.logs.String(), line+" repeated=2") {
		if time.Now().After(deadline) {
			t.Fatalf("no count logged after the interval:\n%s", h.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.do(signed(body, ""))
	if n := strings.Count(h.logs.String(), line+" remote="); n != 2 {
		t.Errorf("%d whole lines, want 2: the first of each interval", n)
	}
}
