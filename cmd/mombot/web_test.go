package main

// serve's wiring of the family's page (web.go), run in-process.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/internal/logtest"
)

// TestPageCheck checks the page's address against the webhook's and the
// token: the default moves off the webhook's port, an address given does
// not and is refused there, and without a token only loopback will do.
func TestPageCheck(t *testing.T) {
	const token = "0123456789abcdef-token"
	tests := []struct {
		name    string
		env     map[string]string
		flag    string // --web-listen, if given
		webhook string // --listen with WhatsApp served; "" for the page alone
		want    string // the address after; "" when refused
		usage   string // part of the usage error
	}{
		{name: "default, alone", want: "127.0.0.1:8080"},
		{name: "default beside the webhook on :8080", webhook: ":8080", want: "127.0.0.1:8081"},
		{name: "default beside the webhook elsewhere", webhook: ":9000", want: "127.0.0.1:8080"},
		{name: "given on the webhook's port", flag: "127.0.0.1:9000", webhook: ":9000", usage: "shares the port of the webhook"},
		{name: "from the environment", env: map[string]string{"MOMBOT_WEB_LISTEN": "127.0.0.1:7000"}, want: "127.0.0.1:7000"},
		{name: "every interface without a token", flag: ":8080", usage: "reachable from other machines"},
		{name: "a LAN address without a token", flag: "192.168.1.20:8080", usage: "reachable from other machines"},
		{name: "every interface with a token", flag: "0.0.0.0:8080", env: map[string]string{"MOMBOT_WEB_TOKEN": token}, want: "0.0.0.0:8080"},
		{name: "a short token", env: map[string]string{"MOMBOT_WEB_TOKEN": "hunter2"}, usage: "MOMBOT_WEB_TOKEN is too short"},
		{name: "a port alone", flag: "8080", usage: "a port alone is not an address"},
		{name: "off", flag: "off", want: "off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &env{getenv: func(k string) string { return tt.env[k] }, stderr: io.Discard}
			fs := cli.NewFlagSet("mombot serve", "")
			var c pageConfig
			c.register(fs, e)
			var args []string
			if tt.flag != "" {
				args = []string{"--web-listen", tt.flag}
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			err := c.check(tt.webhook)
			if tt.usage != "" {
				var u cli.UsageError
				if err == nil || !strings.Contains(err.Error(), tt.usage) || !errors.As(err, &u) {
					t.Errorf("check: %v; want a usage error with %q", err, tt.usage)
				}
				return
			}
			if err != nil || c.listen != tt.want {
				t.Errorf("check: %v, address %q; want %q", err, c.listen, tt.want)
			}
		})
	}
}

var pageAloneRE = regexp.MustCompile(`page alone at (http://[^"\s]+)`)

// TestServePageAlone checks serve with the Anthropic key only and no
// configuration file: it says in one line that it runs the page alone and
// where, and the page says how to name the family.
func TestServePageAlone(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{
		"ANTHROPIC_API_KEY":  anthropictest.APIKey,
		"ANTHROPIC_BASE_URL": anthropictest.NewServer(t).URL,
		"MOMBOT_CONFIG":      "", // mombot.json in the working folder, which has none
		"MOMBOT_STORE":       filepath.Join(dir, "data", "conversations.json"),
		"MOMBOT_LOG_FORMAT":  "text",
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &logtest.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"mombot", "serve", "--web-listen", "127.0.0.1:0"}, func(k string) string { return vars[k] }, strings.NewReader(""), &bytes.Buffer{}, logs)
	}()
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; {
		if m := pageAloneRE.FindStringSubmatch(logs.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned: %v\n%s", err, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not say where the page is:\n%s", logs.String())
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Name your family") || !strings.Contains(string(body), "mombot.json") {
		t.Errorf("GET %s: %d\n%s", url, resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve after cancel: %v", err)
	}
	if lines := strings.Count(logs.String(), "page alone"); lines != 1 || strings.Contains(logs.String(), "WHATSAPP_ACCESS_TOKEN") {
		t.Errorf("the log says %d times that the page runs alone, or asks for WhatsApp's secrets:\n%s", lines, logs.String())
	}
}

var pageBesideRE = regexp.MustCompile(`page is at (http://[^"\s]+)`)

// TestServePageBesideWhatsApp checks that with WhatsApp set up, the page
// is served beside the webhook, on its own address.
func TestServePageBesideWhatsApp(t *testing.T) {
	vars := serveVars(t)
	vars["WHATSAPP_APP_SECRET"] = "serve-page-app-secret"
	s := startServeInProcess(t, vars, "--web-listen", "127.0.0.1:0")
	m := pageBesideRE.FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no line says where the page is:\n%s", s.logs.String())
	}
	if m[1] == s.url+"/" {
		t.Fatalf("the page is on the webhook's address %s", s.url)
	}
	resp, err := http.Get(m[1] + "people/erin")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<h1>Erin</h1>") {
		t.Errorf("Erin's page: %d\n%s", resp.StatusCode, body)
	}
	// The webhook's address does not serve the page.
	if resp, err := http.Get(s.url + "/people/erin"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("the webhook's address serves the page")
		}
	}
	if code := s.postUnsigned(t); code != http.StatusUnauthorized {
		t.Errorf("the webhook beside the page: an unsigned delivery got %d, want 401", code)
	}
	s.stop(t)
}
