package main

// The harness of the end-to-end tests of mombot serve: the real binary,
// started as a process on a free port, with a fake Graph API and a fake
// Messages API in the test process, and Meta's webhooks built and signed
// here.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/internal/logtest"
	"github.com/mombot/mombot/whatsapp"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// Secrets of the served processes; a test fails if one reaches their logs.
const (
	e2eAppSecret   = "e2e-app-secret-5f1b8c"
	e2eVerifyToken = "e2e-verify-token-93ad"
)

// buildMombot builds the mombot binary into a temporary folder of t.
func buildMombot(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mombot")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serveFixture is what the served processes share: the binary, the fake
// APIs, a configuration file naming the family, and a store.
type serveFixture struct {
	t      testing.TB
	bin    string
	graph  *graphtest.Server
	claude *anthropictest.Server
	dir    string
	config string
	store  string
	// args are extra flags of every serve process.
	args []string
	// extraEnv are extra variables of every process, "NAME=value".
	extraEnv []string
}

// newServeFixture builds the binary and starts the fake APIs. family maps
// phone numbers ("+14155551234") to names; store is the --store URL.
func newServeFixture(t testing.TB, store string, family map[string]string) *serveFixture {
	t.Helper()
	f := &serveFixture{
		t:      t,
		bin:    buildMombot(t),
		graph:  graphtest.NewServer(t),
		claude: anthropictest.NewServer(t),
		dir:    t.TempDir(),
		store:  store,
	}
	// Summaries are on, as by default: the summarizer's calls are
	// answered apart from a test's scripted answers (fakeSummarizer).
	f.claude.Route(assistant.DefaultSummaryModel, fakeSummarizer)
	cfg := map[string]any{"timezone": "UTC", "family": map[string]any{}, "whatsapp": map[string]any{"max_age": "24h", "graph_version": graphtest.Version}}
	for phone, name := range family {
		cfg["family"].(map[string]any)[phone] = map[string]string{"name": name}
	}
	data, _ := json.Marshal(cfg)
	f.config = filepath.Join(f.dir, "mombot.json")
	if err := os.WriteFile(f.config, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range f.claude.Rejected() {
			t.Errorf("the fake Messages API rejected a request: %s", r)
		}
	})
	return f
}

// env is the environment of a serve process: the secrets, and nothing
// inherited but PATH and HOME.
func (f *serveFixture) env() []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + f.dir,
		"ANTHROPIC_API_KEY=" + anthropictest.APIKey,
		"ANTHROPIC_BASE_URL=" + f.claude.URL,
		"WHATSAPP_ACCESS_TOKEN=" + graphtest.Token,
		"WHATSAPP_APP_SECRET=" + e2eAppSecret,
		"WHATSAPP_VERIFY_TOKEN=" + e2eVerifyToken,
		"WHATSAPP_PHONE_NUMBER_ID=" + graphtest.PhoneNumberID,
		"WHATSAPP_GRAPH_URL=" + f.graph.URL,
		"MOMBOT_INSECURE_TEST_ENDPOINTS=1", // the fakes are http on loopback
		"MOMBOT_STORE=" + f.store,
		"MOMBOT_LOG_FORMAT=text", // the tests read key=value lines; off a terminal the default is JSON
	}, f.extraEnv...)
}

// mombot runs a short mombot command, such as history show, on the
// fixture's store and configuration, and returns its stdout.
func (f *serveFixture) mombot(args ...string) string {
	f.t.Helper()
	cmd := exec.Command(f.bin, args...)
	cmd.Dir = f.dir // relative defaults (data/lists.json) stay in the test's folder
	cmd.Env = append(f.env(), "MOMBOT_CONFIG="+f.config)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		f.t.Fatalf("mombot %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// servedProc is one running mombot serve process.
type servedProc struct {
	t    testing.TB
	cmd  *exec.Cmd
	URL  string // http://HOST:PORT
	logs *logtest.Buffer
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, set before done closes
}

var servingRE = regexp.MustCompile(`msg="mombot: serving" addr=(\S+)`)

// start starts mombot serve on a free loopback port and waits until it
// serves. The process is killed at the end of the test if still running,
// and its log is checked for secrets.
func (f *serveFixture) start(extra ...string) *servedProc {
	f.t.Helper()
	// The family's page is off unless a test asks for it (f.args): it
	// would take 127.0.0.1:8080 otherwise, in every test at once.
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--web-listen", "off", "--config", f.config}, f.args...)
	cmd := exec.Command(f.bin, append(args, extra...)...)
	cmd.Dir = f.dir // relative defaults (data/lists.json) stay in the test's folder
	cmd.Env = f.env()
	p := &servedProc{t: f.t, cmd: cmd, logs: &logtest.Buffer{}, done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(p.logs, pw)
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	f.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		logs := p.logs.String()
		for _, secret := range []string{e2eAppSecret, e2eVerifyToken, graphtest.Token, anthropictest.APIKey} {
			if strings.Contains(logs, secret) {
				f.t.Errorf("a secret reached the log of mombot serve:\n%s", logs)
			}
		}
		if f.t.Failed() {
			f.t.Logf("log of mombot serve (%s):\n%s", p.URL, logs)
		}
	})
	select {
	case a := <-addr:
		p.URL = "http://" + a
	case <-p.done:
		f.t.Fatalf("mombot serve exited before serving: %v\n%s", p.err, p.logs.String())
	case <-time.After(30 * time.Second):
		f.t.Fatalf("mombot serve did not start serving:\n%s", p.logs.String())
	}
	return p
}

// stop sends SIGTERM and waits for the process to finish the messages in
// hand and exit; a graceful shutdown exits 0.
func (p *servedProc) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		p.t.Fatal("mombot serve did not exit within 90s of SIGTERM")
	}
	if p.err != nil {
		p.t.Fatalf("mombot serve after SIGTERM: %v (want exit 0)\n%s", p.err, p.logs.String())
	}
	if !strings.Contains(p.logs.String(), `msg="mombot: stopped"`) {
		p.t.Errorf("no graceful stop in the log:\n%s", p.logs.String())
	}
}

// kill kills the process at once, as a crash or the OOM killer would, and
// waits for it to be gone.
func (p *servedProc) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		p.t.Fatal(err)
	}
	<-p.done
}

// httpClient is the client of the tests' requests to the served processes.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// deliver posts body to /webhook, signed with the app secret, and returns
// the status.
func (p *servedProc) deliver(body []byte) int {
	return p.post(body, graphtest.Sign([]byte(e2eAppSecret), body))
}

// post posts body to /webhook with sig as its signature header (none when
// sig is empty) and returns the status.
func (p *servedProc) post(body []byte, sig string) int {
	p.t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.URL+"/webhook", bytes.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set(whatsapp.SignatureHeader, sig)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		p.t.Errorf("POST /webhook: %v", err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// get returns the status and body of GET path.
func (p *servedProc) get(path string) (int, string) {
	p.t.Helper()
	resp, err := httpClient.Get(p.URL + path)
	if err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// inMessage is one message of a webhook delivery.
type inMessage struct {
	From string // the sender's WhatsApp id, digits only: "14155551234"
	ID   string // the wamid
	Text string
	// Image, when set, makes it an image message with this media id and
	// Text as its caption.
	Image string
	Time  time.Time // zero means now
}

// webhookPayload returns a webhook payload, as Meta posts it, carrying msgs.
func webhookPayload(msgs ...inMessage) []byte {
	var out []map[string]any
	for _, m := range msgs {
		at := m.Time
		if at.IsZero() {
			at = time.Now()
		}
		wm := map[string]any{"from": m.From, "id": m.ID, "timestamp": fmt.Sprint(at.Unix())}
		if m.Image != "" {
			wm["type"] = "image"
			wm["image"] = map[string]string{"id": m.Image, "mime_type": "image/png", "sha256": "ZmFrZQ==", "caption": m.Text}
		} else {
			wm["type"] = "text"
			wm["text"] = map[string]string{"body": m.Text}
		}
		out = append(out, map[string]any{
			"id": "102290129340398",
			"changes": []any{map[string]any{
				"field": "messages",
				"value": map[string]any{
					"messaging_product": "whatsapp",
					"metadata":          map[string]string{"display_phone_number": "15550783881", "phone_number_id": graphtest.PhoneNumberID},
					"contacts":          []any{map[string]any{"profile": map[string]string{"name": "Tester"}, "wa_id": m.From}},
					"messages":          []any{wm},
				},
			}},
		})
	}
	body, _ := json.Marshal(map[string]any{"object": "whatsapp_business_account", "entry": out})
	return body
}

// markerRE finds the marker the tests put in a message's text: [k=KEY].
var markerRE = regexp.MustCompile(`\[k=([^\]\\"]+)\]`)

// echoMarkers makes the fake Messages API answer every request, after
// delay, with "re KEY" for the marker in its last message, so that each
// reply the fake Graph API receives names the message it answers.
func echoMarkers(claude *anthropictest.Server, delay time.Duration) {
	claude.Respond(func(r anthropictest.Request) anthropictest.Response {
		time.Sleep(delay)
		key := "none"
		if n := len(r.Params.Messages); n > 0 {
			if m := markerRE.FindSubmatch(r.Params.Messages[n-1]); m != nil {
				key = string(m[1])
			}
		}
		return anthropictest.Text("re " + key)
	})
}

// markers returns the markers in the user messages of msgs, Messages API
// message objects, in order.
func markers(msgs []json.RawMessage) []string {
	var out []string
	for _, m := range msgs {
		var role struct{ Role string }
		if json.Unmarshal(m, &role); role.Role != "user" {
			continue
		}
		for _, k := range markerRE.FindAllSubmatch(m, -1) {
			out = append(out, string(k[1]))
		}
	}
	return out
}

// waitSent waits until the fake Graph API has received n messages.
func waitSent(t testing.TB, g *graphtest.Server, n int, timeout time.Duration) []graphtest.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sent, err := g.WaitSent(ctx, n)
	if err != nil {
		t.Fatalf("%v; sent: %+v", err, sent)
	}
	return sent
}
