package whatsapp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/logtest"
	"github.com/mombot/mombot/whatsapp"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

const (
	appSecret   = "test-app-secret-0123456789"
	verifyToken = "test-verify-token-abcdef"
	// sheena sends the documented sample payloads in testdata.
	sheena     = "+16505551234"
	sheenaWaID = "16505551234"
	// sampleTime is a minute after the first sample message was sent.
	sampleUnix = 1749416383
)

var sampleTime = time.Unix(sampleUnix, 0).Add(time.Minute)

// syncBuffer is a log the test reads while the code under test writes it.
type syncBuffer = logtest.Buffer

// recorder stands for the assistant: it records what it is asked;
// respond, when set, computes the reply, and the default echoes the text.
// An error stands for the assistant's apology, apology.Message(err).
type recorder struct {
	mu      sync.Mutex
	got     []whatsapp.Inbound
	respond func(ctx, held context.Context, in whatsapp.Inbound) (string, error)
	// unheld counts the calls not given the sender's lock.
	unheld int
	// sent are the parts of replies the Client sent, by sender.
	sent map[string][]whatsapp.Sent
}

func (r *recorder) Respond(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
	r.mu.Lock()
	r.got = append(r.got, in)
	if held == nil {
		r.unheld++
	}
	f := r.respond
	r.mu.Unlock()
	if f != nil {
		return f(ctx, held, in)
	}
	return "echo: " + in.Text, nil
}

func (r *recorder) recordSent(to string, sent []whatsapp.Sent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sent == nil {
		r.sent = map[string][]whatsapp.Sent{}
	}
	r.sent[to] = append(r.sent[to], sent...)
}

func (r *recorder) sentTo(to string) []whatsapp.Sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent[to])
}

// stage is the delivery.Handler the tests put between the Pipeline and the
// recorder, as mombot serve puts its answerer between the Pipeline and the
// assistant: the Client reads the message, the recorder answers it, the
// Client sends the reply.
type stage struct {
	client *whatsapp.Client
	resp   *recorder
}

func (s stage) Answer(ctx, held context.Context, m delivery.Message) ([]string, error) {
	in, err := s.client.Inbound(ctx, m)
	switch {
	case errors.Is(err, whatsapp.ErrNoReply):
		return nil, fmt.Errorf("%w: %w", delivery.ErrSkip, err)
	case err != nil:
		return whatsapp.Split(apology.Message(err), whatsapp.MaxTextLength), nil
	}
	reply, err := s.resp.Respond(ctx, held, in)
	if err != nil {
		reply = apology.Message(err)
	}
	return whatsapp.Split(reply, whatsapp.MaxTextLength), nil
}

func (s stage) Send(ctx context.Context, m delivery.Message, parts []string) (int, error) {
	sent, err := s.client.Send(ctx, m, parts)
	s.resp.recordSent(m.Key, sent)
	if whatsapp.Temporary(err) {
		err = fmt.Errorf("%w: %w", delivery.ErrTemporary, err)
	}
	return len(sent), err
}

// setup is what a test wires: the WhatsApp settings, and around them what
// mombot serve wires (the inbox, the locker, the health check).
type setup struct {
	whatsapp.Config
	// Inbox is the Pipeline's; nil means an inbox file in a temporary
	// folder, opened anew at each start.
	Inbox            delivery.Inbox
	Locker           delivery.Locker
	MemoryFallback   bool
	ResumeEvery      time.Duration
	ShutdownLockWait time.Duration
	SendingGrace     time.Duration
	// Health is the Server's health check.
	Health func(ctx context.Context) error
	// Responder answers; nil means the harness's own recorder.
	Responder *recorder
}

func (r *recorder) inbound() []whatsapp.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]whatsapp.Inbound(nil), r.got...)
}

// harness is a Server and a Client wired through a delivery Pipeline to a
// recorder, with a fake Graph API, an inbox file in a temporary folder
// (unless the test sets its own Inbox) and a log buffer. At the end of the
// test it checks that no secret reached the log.
type harness struct {
	t     *testing.T
	cfg   setup
	srv   *whatsapp.Server
	graph *graphtest.Server
	resp  *recorder
	logs  *syncBuffer
	// queuePath is the inbox file the Server uses; "" when the test set
	// its own Inbox (or none, for the Server's memory).
	queuePath string
	shut      bool
}

func newHarness(t *testing.T, configure ...func(*setup)) *harness {
	t.Helper()
	h := &harness{
		t:         t,
		graph:     graphtest.NewServer(t),
		resp:      &recorder{},
		logs:      &syncBuffer{},
		queuePath: filepath.Join(t.TempDir(), "whatsapp-inbox.json"),
	}
	h.cfg = setup{Config: whatsapp.Config{
		AccessToken:   graphtest.Token,
		PhoneNumberID: graphtest.PhoneNumberID,
		AppSecret:     appSecret,
		VerifyToken:   verifyToken,
		BaseURL:       h.graph.URL,
		// The fake Graph API is http on loopback.
		InsecureTestEndpoints: true,
		APIVersion:            graphtest.Version,
		RetryDelay:            time.Millisecond,
		Family:                map[string]string{"+1 650 555 1234": "Sheena", "+1 555 000 0001": "Ann", "+1 555 000 0002": "Bob"},
		Logger:                slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:                   func() time.Time { return sampleTime },
	}}
	for _, f := range configure {
		f(&h.cfg)
	}
	if h.cfg.Responder != nil {
		h.resp = h.cfg.Responder
	}
	if h.cfg.Inbox != nil {
		h.queuePath = ""
	}
	h.start()
	t.Cleanup(func() {
		h.shutdown()
		h.resp.mu.Lock()
		if n := h.resp.unheld; n > 0 {
			t.Errorf("the Responder was called %d times without the sender's lock", n)
		}
		h.resp.mu.Unlock()
		logs := h.logs.String()
		for _, secret := range []string{graphtest.Token, appSecret, verifyToken} {
			if strings.Contains(logs, secret) {
				t.Errorf("a secret was logged:\n%s", logs)
			}
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs)
		}
	})
	return h
}

// start opens the inbox file and starts a Client, a Pipeline and a
// Server, as mombot serve does.
func (h *harness) start() {
	h.t.Helper()
	if h.queuePath != "" {
		q, err := delivery.OpenFile(h.queuePath, &delivery.FileOptions{Now: h.cfg.Now, Logger: h.cfg.Logger})
		if err != nil {
			h.t.Fatal(err)
		}
		h.cfg.Inbox = q
	}
	client, err := whatsapp.NewClient(h.cfg.Config)
	if err != nil {
		h.t.Fatal(err)
	}
	pipe := delivery.New(stage{client: client, resp: h.resp}, &delivery.Options{
		Inbox: h.cfg.Inbox, Locker: h.cfg.Locker, MemoryFallback: h.cfg.MemoryFallback,
		ResumeEvery: h.cfg.ResumeEvery, ShutdownLockWait: h.cfg.ShutdownLockWait, SendingGrace: h.cfg.SendingGrace,
		Logger: h.cfg.Logger, Now: h.cfg.Now,
	})
	h.srv, err = whatsapp.NewServer(client, pipe, &whatsapp.ServerOptions{Health: h.cfg.Health})
	if err != nil {
		pipe.Shutdown(context.Background())
		h.t.Fatal(err)
	}
	h.shut = false
}

// restart shuts the Server down and starts a new one on the same inbox
// file, fake Graph API and responder.
func (h *harness) restart() {
	h.t.Helper()
	h.shutdown()
	h.start()
}

// shutdown stops the Server, waiting for every queued message.
func (h *harness) shutdown() {
	h.t.Helper()
	if h.shut {
		return
	}
	h.shut = true
	if err := h.srv.Shutdown(context.Background()); err != nil {
		h.t.Errorf("Shutdown: %v", err)
	}
}

// do serves one request and returns the response.
func (h *harness) do(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.srv.ServeHTTP(w, r)
	return w
}

// post delivers body signed with the app secret and returns the status.
func (h *harness) post(body []byte) int {
	return h.postSigned(body, graphtest.Sign([]byte(appSecret), body))
}

func (h *harness) postSigned(body []byte, signature string) int {
	r := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if signature != "" {
		r.Header.Set(whatsapp.SignatureHeader, signature)
	}
	return h.do(r).Code
}

// postFile delivers a payload from testdata and checks it is accepted.
func (h *harness) postFile(name string) {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		h.t.Fatal(err)
	}
	if code := h.post(data); code != http.StatusOK {
		h.t.Fatalf("delivery of %s: status %d", name, code)
	}
}

// bodies returns the bodies the fake Graph API accepted, in order.
func (h *harness) bodies() []string {
	var out []string
	for _, m := range h.graph.Sent() {
		out = append(out, m.Body)
	}
	return out
}

// textMessage is one "messages" item of type text.
func textMessage(waID, id, text string, sent time.Time) string {
	return fmt.Sprintf(`{"from":%q,"id":%q,"timestamp":"%d","type":"text","text":{"body":%q}}`, waID, id, sent.Unix(), text)
}

// change is one change of field "messages" holding the given items.
func change(contactsWaID string, messages ...string) string {
	return fmt.Sprintf(`{"field":"messages","value":{"messaging_product":"whatsapp",`+
		`"metadata":{"display_phone_number":"15550783881","phone_number_id":%q},`+
		`"contacts":[{"profile":{"name":"Someone"},"wa_id":%q}],"messages":[%s]}}`,
		graphtest.PhoneNumberID, contactsWaID, strings.Join(messages, ","))
}

// payload wraps entries, each a list of changes, into a webhook body.
func payload(entries ...[]string) []byte {
	var es []string
	for i, changes := range entries {
		es = append(es, fmt.Sprintf(`{"id":"10229012934039%d","changes":[%s]}`, i, strings.Join(changes, ",")))
	}
	return []byte(`{"object":"whatsapp_business_account","entry":[` + strings.Join(es, ",") + `]}`)
}

// text is a delivery of one text message.
func text(waID, id, body string) []byte {
	return payload([]string{change(waID, textMessage(waID, id, body, sampleTime.Add(-time.Second)))})
}

// openQueue opens the inbox file at path, as the next process would.
func openQueue(t *testing.T, path string) *delivery.File {
	t.Helper()
	q, err := delivery.OpenFile(path, &delivery.FileOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// keys returns the senders with messages in q.
func keys(t *testing.T, q delivery.Inbox) []string {
	t.Helper()
	k, err := q.Keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
