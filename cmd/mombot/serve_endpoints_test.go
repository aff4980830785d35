package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// The Graph API URL of a test's fake (http on loopback) is refused unless
// MOMBOT_INSECURE_TEST_ENDPOINTS=1, which only the environment sets, and
// serve then warns, naming it.
func TestServeInsecureTestEndpoints(t *testing.T) {
	t.Run("without it, an http Graph API is refused before serving", func(t *testing.T) {
		vars := serveVars(t)
		vars["WHATSAPP_APP_SECRET"] = "serve-endpoints-app-secret"
		delete(vars, "MOMBOT_INSECURE_TEST_ENDPOINTS")
		var stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := run(ctx, []string{"mombot", "serve", "--listen", "127.0.0.1:0"}, func(k string) string { return vars[k] }, strings.NewReader(""), &bytes.Buffer{}, &stderr)
		if err == nil {
			t.Fatal("serve started with an http Graph API")
		}
		if strings.Contains(stderr.String(), "mombot: serving") {
			t.Errorf("serve listened before refusing:\n%s", stderr.String())
		}
		if msg := err.Error(); !strings.Contains(msg, "https://graph.facebook.com") || !strings.Contains(msg, "MOMBOT_INSECURE_TEST_ENDPOINTS=1") {
			t.Errorf("error %q, want it to name Meta's URL and the test opt-in", msg)
		}
	})
	t.Run("with it, serve starts and warns", func(t *testing.T) {
		vars := serveVars(t)
		vars["WHATSAPP_APP_SECRET"] = "serve-endpoints-app-secret"
		s := startServeInProcess(t, vars)
		if !strings.Contains(s.logs.String(), `level=WARN msg="mombot: INSECURE: MOMBOT_INSECURE_TEST_ENDPOINTS=1`) {
			t.Errorf("no warning naming MOMBOT_INSECURE_TEST_ENDPOINTS:\n%s", s.logs.String())
		}
		s.stop(t)
	})
	t.Run("another value is a usage error", func(t *testing.T) {
		vars := serveVars(t)
		vars["MOMBOT_INSECURE_TEST_ENDPOINTS"] = "true"
		var stderr bytes.Buffer
		err := run(context.Background(), []string{"mombot", "serve", "--listen", "127.0.0.1:0"}, func(k string) string { return vars[k] }, strings.NewReader(""), &bytes.Buffer{}, &stderr)
		if code := exitCode(err, &stderr); code != 2 || !strings.Contains(stderr.String(), "MOMBOT_INSECURE_TEST_ENDPOINTS") {
			t.Errorf("exit %d, %q; want 2 naming the variable", code, stderr.String())
		}
	})
}

// A configuration file that sets where secrets go (here transcription.url)
// and that the process can write is named in a warning at start.
func TestServeWarnsOfAWritableConfig(t *testing.T) {
	vars := serveVars(t)
	vars["WHATSAPP_APP_SECRET"] = "serve-endpoints-app-secret"
	cfg := `{"family":{"+14155551234":{"name":"Erin"}},"whatsapp":{"graph_version":"v21.0"},"transcription":{"url":"https://api.openai.com/v1","model":"whisper-1"}}`
	if err := os.WriteFile(vars["MOMBOT_CONFIG"], []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	const warning = `msg="mombot: the configuration file is writable by this process and sets where secrets go`
	s := startServeInProcess(t, vars)
	if logs := s.logs.String(); !strings.Contains(logs, warning) || !strings.Contains(logs, `settings=transcription.url`) {
		t.Errorf("no warning of the writable configuration:\n%s", logs)
	}
	s.stop(t)
	if os.Geteuid() == 0 {
		t.Skip("running as root, which can write a read-only file: the read-only case is not tested")
	}
	if err := os.Chmod(vars["MOMBOT_CONFIG"], 0o400); err != nil {
		t.Fatal(err)
	}
	s = startServeInProcess(t, vars)
	if strings.Contains(s.logs.String(), warning) {
		t.Errorf("a read-only configuration warned of:\n%s", s.logs.String())
	}
	s.stop(t)
}
