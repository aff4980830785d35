package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var metricsAddrRE = regexp.MustCompile(`msg="mombot: metrics serving" addr=(\S+)`)

// scrape GETs url's /metrics and returns each sample line's value by its
// name and labels, as written ("mombot_messages_total{outcome=\"answered\",reason=\"\"}"),
// and the whole text.
func scrape(t *testing.T, url string) (map[string]float64, string) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s\n%s", resp.Status, body)
	}
	samples := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return samples, string(body)
}

// TestServeMetrics answers a message end to end with --metrics-listen and
// checks what the scrape says: every metric is there, no phone number is,
// and the counts moved with the message.
func TestServeMetrics(t *testing.T) {
	store := "file:" + filepath.Join(t.TempDir(), "conversations.json")
	f := newServeFixture(t, store, map[string]string{erin: "Erin"})
	echoMarkers(f.claude, 0)
	p := f.start("--metrics-listen", "127.0.0.1:0")
	m := metricsAddrRE.FindStringSubmatch(p.logs.String())
	if m == nil {
		t.Fatalf("no metrics address in the log:\n%s", p.logs.String())
	}
	murl := "http://" + m[1]

	// The webhook port does not serve the metrics, nor the build; the
	// metrics port serves both.
	if code, _ := p.get("/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics on the webhook port: %d, want 404", code)
	}
	if code, body := p.get("/healthz?verbose=1"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz?verbose=1 on the webhook port: %d %q, want 200 \"ok\\n\"", code, body)
	}
	resp, err := http.Get(murl + "/healthz?verbose=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(body), "ok\nversion: ") || !strings.HasSuffix(string(body), " "+runtime.Version()+"\n") {
		t.Errorf("GET /healthz?verbose=1 on the metrics port: %q, want the status and the build", body)
	}
	before, _ := scrape(t, murl)

	run := time.Now().UnixNano()
	if code := p.deliver(webhookPayload(inMessage{From: erinWaID, ID: fmt.Sprintf("wamid.metrics.%d", run), Text: "[k=m1] hello"})); code != 200 {
		t.Fatalf("delivery: %d", code)
	}
	waitSent(t, f.graph, 1, 20*time.Second)
	// From outside the family: skipped. Badly signed: refused.
	p.deliver(webhookPayload(inMessage{From: "14155550000", ID: fmt.Sprintf("wamid.metrics.%d.x", run), Text: "hi"}))
	if code := p.post(webhookPayload(inMessage{From: erinWaID, ID: "wamid.metrics.bad", Text: "x"}), "sha256=00"); code != http.StatusForbidden {
		t.Errorf("a badly signed delivery: %d, want 403", code)
	}

	var after map[string]float64
	var text string
	// The counts move as the reply is sent and recorded, just after the
	// fake Graph API has it; wait for them rather than race them.
	for deadline := time.Now().Add(10 * time.Second); ; {
		after, text = scrape(t, murl)
		done := after[`mombot_messages_total{outcome="answered",reason=""}`] >= 1 &&
			after[`mombot_graph_send_attempts_total{result="sent"}`] >= 1 && after["mombot_inbox_senders"] == 0
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, name := range []string{
		"mombot_webhooks_total", "mombot_messages_total", "mombot_reply_duration_seconds",
		"mombot_anthropic_requests_total", "mombot_anthropic_tokens_total",
		"mombot_graph_send_attempts_total", "mombot_graph_send_retries_total",
		"mombot_store_operation_duration_seconds", "mombot_inbox_senders",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(text, "\n# TYPE "+name+" ") {
			t.Errorf("/metrics has no %s", name)
		}
	}
	for _, phone := range []string{erinWaID, "14155550000", "4155551234"} {
		if strings.Contains(text, phone) {
			t.Errorf("/metrics holds the phone number %s:\n%s", phone, text)
		}
	}
	moved := []struct {
		sample string
		by     float64
	}{
		{`mombot_webhooks_total{reason="",result="received"}`, 2},
		{`mombot_webhooks_total{reason="bad_signature",result="refused"}`, 1},
		{`mombot_messages_total{outcome="answered",reason=""}`, 1},
		{`mombot_messages_total{outcome="skipped",reason="not_family"}`, 1},
		{`mombot_reply_duration_seconds_count`, 1},
		{`mombot_anthropic_requests_total{status="200"}`, 1},
		{`mombot_graph_send_attempts_total{result="sent"}`, 1},
		{`mombot_store_operation_duration_seconds_count{kind="conversations",op="put"}`, 1},
		{`mombot_store_operation_duration_seconds_count{kind="usage",op="put"}`, 1},
	}
	for _, m := range moved {
		if got := after[m.sample] - before[m.sample]; got != m.by {
			t.Errorf("%s moved by %v, want %v", m.sample, got, m.by)
		}
	}
	// The prompt's tokens are input, or cache writes and reads once the
	// prompt is long enough to be cached (the family's prefix, with the
	// note tools, is).
	prompt := after[`mombot_anthropic_tokens_total{kind="input"}`] + after[`mombot_anthropic_tokens_total{kind="cache_write_5m"}`] +
		after[`mombot_anthropic_tokens_total{kind="cache_write_1h"}`] + after[`mombot_anthropic_tokens_total{kind="cache_read"}`]
	if prompt <= 0 || after[`mombot_anthropic_tokens_total{kind="output"}`] <= 0 {
		t.Errorf("no prompt or output tokens counted:\n%s", text)
	}
	if v, ok := after["mombot_inbox_senders"]; !ok || v != 0 {
		t.Errorf("mombot_inbox_senders = %v (present %v), want 0 once answered", v, ok)
	}
	p.stop()
}

func TestServeRefusesMetricsOnTheWebhookAddress(t *testing.T) {
	vars := serveVars(t)
	vars["WHATSAPP_APP_SECRET"] = "s"
	for _, pair := range [][2]string{{":8080", ":8080"}, {"127.0.0.1:8080", ":8080"}, {"0.0.0.0:9000", "127.0.0.1:9000"}} {
		var stderr strings.Builder
		err := run(t.Context(), []string{"mombot", "serve", "--listen", pair[0], "--metrics-listen", pair[1]}, func(k string) string { return vars[k] }, strings.NewReader(""), io.Discard, &stderr)
		if code := exitCode(err, &stderr); code != 2 || !strings.Contains(err.Error(), "metrics-listen") {
			t.Errorf("--listen %s --metrics-listen %s: exit %d (%v), want 2 and the reason", pair[0], pair[1], code, err)
		}
	}
}

func TestServeStopsWhenTheMetricsAddressIsBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	vars := serveVars(t)
	vars["WHATSAPP_APP_SECRET"] = "s"
	var stderr strings.Builder
	err = run(t.Context(), []string{"mombot", "serve", "--listen", "127.0.0.1:0", "--metrics-listen", ln.Addr().String()}, func(k string) string { return vars[k] }, strings.NewReader(""), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "metrics") {
		t.Errorf("serve with its metrics address taken: %v, want an error that names the metrics", err)
	}
	if strings.Contains(stderr.String(), "mombot: serving") {
		t.Errorf("serve started serving without its metrics:\n%s", stderr.String())
	}
}
