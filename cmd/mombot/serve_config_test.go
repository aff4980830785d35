package main

// mombot serve's fail-closed start, run in-process: without an app secret
// it refuses to start unless told, loudly, to run without signatures.

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/internal/logtest"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// serveVars is the environment of an in-process mombot serve with
// everything but the app secret, on a fake Graph API and a store in a
// temporary folder.
func serveVars(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mombot.json")
	if err := os.WriteFile(cfg, []byte(`{"family":{"+14155551234":{"name":"Erin"}},"whatsapp":{"graph_version":"`+graphtest.Version+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"ANTHROPIC_API_KEY":              anthropictest.APIKey,
		"ANTHROPIC_BASE_URL":             anthropictest.NewServer(t).URL,
		"WHATSAPP_ACCESS_TOKEN":          graphtest.Token,
		"WHATSAPP_VERIFY_TOKEN":          "serve-config-verify-token",
		"WHATSAPP_PHONE_NUMBER_ID":       graphtest.PhoneNumberID,
		"WHATSAPP_GRAPH_URL":             graphtest.NewServer(t).URL,
		"MOMBOT_INSECURE_TEST_ENDPOINTS": "1", // the fakes are http on loopback
		"MOMBOT_CONFIG":                  cfg,
		"MOMBOT_STORE":                   filepath.Join(dir, "conversations.json"),
		"MOMBOT_LOG_FORMAT":              "text", // the tests read key=value lines; off a terminal the default is JSON
	}
}

func TestServeRefusesToStartWithoutAppSecret(t *testing.T) {
	for _, secret := range []string{"", "   "} {
		vars := serveVars(t)
		vars["WHATSAPP_APP_SECRET"] = secret
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var stdout, stderr bytes.Buffer
		err := run(ctx, []string{"mombot", "serve", "--listen", "127.0.0.1:0"}, func(k string) string { return vars[k] }, strings.NewReader(""), &stdout, &stderr)
		cancel()
		if err == nil {
			t.Fatalf("secret %q: serve started", secret)
		}
		if strings.Contains(stderr.String(), "mombot: serving") {
			t.Errorf("secret %q: serve listened before refusing:\n%s", secret, stderr.String())
		}
		stderr.Reset()
		if code := exitCode(err, &stderr); code == 0 {
			t.Errorf("secret %q: exit status 0", secret)
		}
		msg := stderr.String()
		if lines := strings.Count(msg, "\n"); lines != 1 || !strings.Contains(msg, "WHATSAPP_APP_SECRET is not set") || !strings.Contains(msg, "--insecure-skip-signature") {
			t.Errorf("secret %q: stderr %q, want one line naming WHATSAPP_APP_SECRET and the development flag", secret, msg)
		}
	}
}

func TestServeInsecureSkipSignature(t *testing.T) {
	t.Run("without a secret: starts, says INSECURE, accepts unsigned", func(t *testing.T) {
		s := startServeInProcess(t, serveVars(t), "--insecure-skip-signature")
		if !strings.Contains(s.logs.String(), "INSECURE") {
			t.Errorf("no INSECURE warning in the log:\n%s", s.logs.String())
		}
		if code := s.postUnsigned(t); code != http.StatusOK {
			t.Errorf("an unsigned delivery got %d, want 200", code)
		}
		s.stop(t)
	})
	t.Run("with a secret: the flag changes nothing", func(t *testing.T) {
		vars := serveVars(t)
		vars["WHATSAPP_APP_SECRET"] = "serve-config-app-secret"
		s := startServeInProcess(t, vars, "--insecure-skip-signature")
		if strings.Contains(s.logs.String(), "signatures are NOT checked") {
			t.Errorf("unchecked signatures logged though an app secret is set:\n%s", s.logs.String())
		}
		if code := s.postUnsigned(t); code != http.StatusUnauthorized {
			t.Errorf("an unsigned delivery got %d, want 401", code)
		}
		s.stop(t)
	})
}

// inProcessServe is a mombot serve running in a goroutine of the test.
type inProcessServe struct {
	url    string
	logs   *logtest.Buffer
	cancel context.CancelFunc
	done   chan error
}

var servingAddrRE = regexp.MustCompile(`msg="mombot: serving" addr=(\S+)`)

// startServeInProcess runs mombot serve on a free loopback port with vars
// and the extra flags, and waits until it serves.
func startServeInProcess(t *testing.T, vars map[string]string, flags ...string) *inProcessServe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &inProcessServe{logs: &logtest.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	// The family's page is off unless flags ask for it: it would take
	// 127.0.0.1:8080 otherwise, in every test at once.
	args := append([]string{"mombot", "serve", "--listen", "127.0.0.1:0", "--web-listen", "off"}, flags...)
	go func() {
		s.done <- run(ctx, args, func(k string) string { return vars[k] }, strings.NewReader(""), &bytes.Buffer{}, s.logs)
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
		if t.Failed() {
			t.Logf("log of mombot serve:\n%s", s.logs.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := servingAddrRE.FindStringSubmatch(s.logs.String()); m != nil {
			s.url = "http://" + m[1]
			return s
		}
		select {
		case err := <-s.done:
			s.done <- err // for the cleanup
			t.Fatalf("mombot serve returned before serving: %v\n%s", err, s.logs.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("mombot serve did not start serving:\n%s", s.logs.String())
		}
	}
}

// postUnsigned posts a text message from a number outside the family
// without a signature and returns the status.
func (s *inProcessServe) postUnsigned(t *testing.T) int {
	t.Helper()
	body := `{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"` + graphtest.PhoneNumberID +
		`"},"messages":[{"from":"15550001111","id":"wamid.unsigned","timestamp":"` + strconv.FormatInt(time.Now().Unix(), 10) + `","type":"text","text":{"body":"hi"}}]}}]}]}`
	resp, err := http.Post(s.url+"/webhook", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// stop cancels serve's context, as SIGTERM does, and checks that it stops
// cleanly.
func (s *inProcessServe) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	err := <-s.done
	s.done <- err // for the cleanup
	if err != nil {
		t.Errorf("serve after cancel: %v", err)
	}
	if !strings.Contains(s.logs.String(), `msg="mombot: stopped"`) {
		t.Errorf("no graceful stop in the log")
	}
}

// Every missing secret is named in one message, not one per run. Without
// any of WhatsApp's, serve runs the family's page alone, which needs the
// Anthropic key only.
func TestServeNamesEveryMissingSecret(t *testing.T) {
	vars := serveVars(t)
	for _, k := range []string{"ANTHROPIC_API_KEY", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN", "WHATSAPP_PHONE_NUMBER_ID"} {
		delete(vars, k)
	}
	_, errOut, code := runCmd(t, vars, "serve", "--listen", "127.0.0.1:0", "--web-listen", "off")
	want := "ANTHROPIC_API_KEY, WHATSAPP_ACCESS_TOKEN, WHATSAPP_APP_SECRET, WHATSAPP_VERIFY_TOKEN, WHATSAPP_PHONE_NUMBER_ID are not set"
	if code != 1 || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want one line with %q", code, errOut, want)
	}
	_, errOut, _ = runCmd(t, vars, "serve", "--insecure-skip-signature", "--web-listen", "off")
	if strings.Contains(errOut, "WHATSAPP_APP_SECRET") {
		t.Errorf("with --insecure-skip-signature the app secret is not needed: %q", errOut)
	}
	_, errOut, code = runCmd(t, vars, "serve", "--listen", "127.0.0.1:0", "--web-listen", "127.0.0.1:0")
	if code != 1 || errOut != "mombot: ANTHROPIC_API_KEY is not set\n" {
		t.Errorf("the page alone without the Anthropic key: exit %d, stderr %q", code, errOut)
	}
}

// A port alone where an address is wanted is a one-line usage error that
// suggests the address, before anything is opened.
func TestListenPortAloneSuggestsTheAddress(t *testing.T) {
	vars := serveVars(t)
	for _, args := range [][]string{
		{"serve", "--listen", "8080"},
		{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "9090"},
		{"healthcheck", "--listen", "8080"},
	} {
		_, errOut, code := runCmd(t, vars, args...)
		port := args[len(args)-1]
		if code != 2 || !strings.Contains(errOut, "write :"+port+" (every interface) or 127.0.0.1:"+port) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("mombot %s: exit %d, stderr %q; want exit 2 and one line suggesting :%s", strings.Join(args, " "), code, errOut, port)
		}
	}
}
