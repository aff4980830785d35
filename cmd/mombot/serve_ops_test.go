package main

// mombot serve as a service sees it: JSON logs line by line, the start-up
// line with the values in force and the build, and mombot healthcheck
// against it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/internal/logtest"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

func TestServeJSONLogsAndHealthcheck(t *testing.T) {
	vars := serveVars(t)
	vars["WHATSAPP_APP_SECRET"] = e2eAppSecret
	vars["MOMBOT_LOG_FORMAT"] = "json"
	// At debug, every line the server has is written, so that all of
	// them are checked for secrets and numbers.
	vars["MOMBOT_LOG_LEVEL"] = "debug"
	logs := &logtest.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"mombot", "serve", "--listen", "127.0.0.1:0"}, func(k string) string { return vars[k] }, strings.NewReader(""), &bytes.Buffer{}, logs)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		checkJSONLogs(t, logs.String(), vars)
	}()

	var serving map[string]any
	for deadline := time.Now().Add(30 * time.Second); serving == nil; {
		for _, line := range strings.Split(logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "mombot: serving" {
				serving = m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	wa, _ := serving["whatsapp"].(map[string]any)
	if wa["api_version"] != graphtest.Version || wa["max_age"] != "24h0m0s" || wa["base_url"] != vars["WHATSAPP_GRAPH_URL"] {
		t.Errorf("the start-up line does not show the values in force: %v", wa)
	}
	if b, _ := serving["build"].(map[string]any); b["go"] == "" || b["go"] == nil {
		t.Errorf("the start-up line does not show the build: %v", serving["build"])
	}
	addr, _ := serving["addr"].(string)

	// A message from the family, answered, so that the log has the lines
	// of a message's life to check.
	p := &servedProc{t: t, URL: "http://" + addr}
	if code := p.deliver(webhookPayload(inMessage{From: erinWaID, ID: fmt.Sprintf("wamid.ops.%d", time.Now().UnixNano()), Text: "hello"})); code != 200 {
		t.Fatalf("delivery: %d", code)
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), `"msg":"whatsapp: message answered"`); {
		if time.Now().After(deadline) {
			t.Fatalf("the message was not answered:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"mombot", "healthcheck", "--listen", addr}, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
	if err != nil || strings.TrimSpace(stdout.String()) != "ok" {
		t.Errorf("healthcheck against a serving server: %v, printed %q", err, stdout.String())
	}
	resp, err := http.Get("http://" + addr + "/healthz?verbose=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The public port does not say which build runs: that is for the
	// metrics port (TestServeMetrics).
	if want := "ok\n"; string(body) != want {
		t.Errorf("/healthz?verbose=1 on the public port: %q, want %q", body, want)
	}
}

// checkJSONLogs checks that every line of logs is a JSON object with a
// time, a level and a message, and that no secret or full phone number of
// vars' family is among them.
func checkJSONLogs(t *testing.T, logs string, vars map[string]string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(logs))
	n := 0
	for sc.Scan() {
		n++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("log line %d is not JSON: %v: %s", n, err, sc.Text())
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k]; !ok {
				t.Errorf("log line %d has no %s: %s", n, k, sc.Text())
			}
		}
	}
	if n == 0 {
		t.Error("no log lines")
	}
	for _, secret := range []string{vars["WHATSAPP_APP_SECRET"], vars["WHATSAPP_ACCESS_TOKEN"], vars["WHATSAPP_VERIFY_TOKEN"], vars["ANTHROPIC_API_KEY"], erinWaID, "4155551234"} {
		if secret != "" && strings.Contains(logs, secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs)
		}
	}
}

func TestHealthcheckFailsWithoutServer(t *testing.T) {
	var stdout, stderr bytes.Buffer
	// Port 1 on loopback: nothing listens there.
	err := run(context.Background(), []string{"mombot", "healthcheck", "--listen", "127.0.0.1:1", "--timeout", "1s"}, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err, &stderr); code != 1 {
		t.Errorf("healthcheck with no server: exit %d (%v), want 1", code, err)
	}
}
