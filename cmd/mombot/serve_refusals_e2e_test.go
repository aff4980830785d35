package main

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusalsKeepTheLogSmall replays a finding on mombot serve as a
// process: 20 GET /webhook?hub.mode=<1,000,000 bytes> with no valid token
// wrote 20 MB of log. Each is refused with 403, and the log grows by a
// few kilobytes: the first refusal, its mode cut, and at shutdown the
// count of the other 19.
func TestServeRefusalsKeepTheLogSmall(t *testing.T) {
	f := newServeFixture(t, "file:"+filepath.Join(t.TempDir(), "conversations.json"), map[string]string{erin: "Erin"})
	p := f.start()
	before := len(p.logs.String())
	q := url.Values{"hub.mode": {strings.Repeat("m", 1_000_000)}, "hub.verify_token": {"guess"}, "hub.challenge": {"1158201444"}}
	for range 20 {
		if code, _ := p.get("/webhook?" + q.Encode()); code != http.StatusForbidden {
			t.Fatalf("status %d, want 403", code)
		}
	}
	p.stop()
	logs := p.logs.String()[before:]
	if len(logs) > 16<<10 {
		t.Errorf("20 refused requests grew the log by %d bytes, want at most 16 KiB", len(logs))
	}
	if n := strings.Count(logs, `msg="whatsapp: webhook verification refused"`); n != 2 {
		t.Errorf("%d lines of the refusal, want 2 (the first and the count):\n%.2000s", n, logs)
	}
	if !strings.Contains(logs, "repeated=19") {
		t.Errorf("no count of the other 19 refusals:\n%.2000s", logs)
	}
}
