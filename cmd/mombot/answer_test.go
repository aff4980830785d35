package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/internal/logtest"
	"github.com/mombot/mombot/metrics"
	"github.com/mombot/mombot/whatsapp"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// fakeAssistant answers like the assistant: "echo: " and the text, or
// what answer says; it records what it is asked and whether it was given
// the sender's lock, held.
type fakeAssistant struct {
	mu     sync.Mutex
	asked  []string
	unheld int
	answer func(in assistant.Inbound) (assistant.Reply, error)
}

func (f *fakeAssistant) HandleLocked(ctx, held context.Context, in assistant.Inbound) (assistant.Reply, error) {
	f.mu.Lock()
	f.asked = append(f.asked, in.Text)
	if held == nil || held.Err() != nil {
		f.unheld++
	}
	answer := f.answer
	f.mu.Unlock()
	if answer != nil {
		return answer(in)
	}
	return assistant.Reply{Text: "echo: " + in.Text}, nil
}

// answerFixture is serve's path of a message in one process: the WhatsApp
// Server, a delivery Pipeline on an inbox file, the answerer with a fake
// assistant, and the WhatsApp Client on a fake Graph API.
type answerFixture struct {
	t     *testing.T
	graph *graphtest.Server
	a     *fakeAssistant
	mem   *conversation.Memory
	logs  *logtest.Buffer
	inbox string
	srv   *whatsapp.Server
	m     *metrics.Metrics
}

func newAnswerFixture(t *testing.T) *answerFixture {
	t.Helper()
	mem, err := conversation.New(memstore.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &answerFixture{
		t: t, graph: graphtest.NewServer(t), a: &fakeAssistant{}, mem: mem, logs: &logtest.Buffer{},
		inbox: filepath.Join(t.TempDir(), "whatsapp-inbox.json"), m: metrics.New(),
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", f.logs.String())
		}
	})
	f.start()
	return f
}

// start starts the path anew on the same inbox file, as a restart does.
func (f *answerFixture) start() {
	f.t.Helper()
	log := slog.New(slog.NewTextHandler(f.logs, nil))
	wa, err := whatsapp.NewClient(whatsapp.Config{
		AccessToken: graphtest.Token, PhoneNumberID: graphtest.PhoneNumberID, AppSecret: e2eAppSecret,
		BaseURL: f.graph.URL, InsecureTestEndpoints: true, APIVersion: graphtest.Version, RetryDelay: time.Millisecond,
		Family: map[string]string{erin: "Erin", "+" + jasonWaID: "Jason"}, Logger: log, Observer: f.m,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	q, err := delivery.OpenFile(f.inbox, &delivery.FileOptions{Logger: log})
	if err != nil {
		f.t.Fatal(err)
	}
	pipe := delivery.New(answerer{wa: wa, a: f.a, mem: f.mem, log: log, m: f.m, outcomes: &outcomeBook{}}, &delivery.Options{Inbox: q, Logger: log})
	if f.srv, err = whatsapp.NewServer(wa, pipe, nil); err != nil {
		f.t.Fatal(err)
	}
}

// deliver posts a text message from the WhatsApp id from, signed.
func (f *answerFixture) deliver(from, id, text string) {
	f.t.Helper()
	body := metaMessage(from, id, time.Now(), map[string]any{"type": "text", "text": map[string]any{"body": text}})
	r := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	r.Header.Set(whatsapp.SignatureHeader, graphtest.Sign([]byte(e2eAppSecret), body))
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		f.t.Fatalf("delivery of %s: %d", id, w.Code)
	}
}

// shutdown finishes the messages in hand.
func (f *answerFixture) shutdown() {
	f.t.Helper()
	if err := f.srv.Shutdown(context.Background()); err != nil {
		f.t.Errorf("Shutdown: %v", err)
	}
	if f.a.unheld > 0 {
		f.t.Errorf("the assistant was asked %d times without the sender's lock", f.a.unheld)
	}
}

// sentTo returns the bodies the fake Graph API got, by WhatsApp id.
func (f *answerFixture) sentTo() map[string][]string {
	sent := map[string][]string{}
	for _, m := range f.graph.Sent() {
		sent[m.To] = append(sent[m.To], m.Body)
	}
	return sent
}

// TestAnswererPanic: a panic while answering is logged with its stack, the
// sender gets the apology, the server goes on with the next message, and
// the message that panicked is not answered again.
func TestAnswererPanic(t *testing.T) {
	f := newAnswerFixture(t)
	f.a.answer = func(in assistant.Inbound) (assistant.Reply, error) {
		if in.Text == "boom" {
			var tools []string
			_ = tools[len(in.Text)] // an index out of range: the kind of bug that panics
		}
		return assistant.Reply{Text: "echo: " + in.Text}, nil
	}
	f.deliver(erinWaID, "wamid.boom", "boom")
	f.deliver(erinWaID, "wamid.after", "after")
	f.deliver(jasonWaID, "wamid.jason", "other sender")
	f.shutdown()
	sent := f.sentTo()
	if got := sent[erinWaID]; len(got) != 2 || got[0] != apology.Internal || got[1] != "echo: after" {
		t.Errorf("sent to the sender %q, want the apology then the next reply", got)
	}
	if got := sent[jasonWaID]; !slices.Equal(got, []string{"echo: other sender"}) {
		t.Errorf("sent to another sender %q", got)
	}
	logs := f.logs.String()
	for _, want := range []string{"level=ERROR", "panic while answering", "index out of range", "goroutine", "answer_test.go"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if strings.Contains(logs, erinWaID) {
		t.Error("the sender's number was logged in full")
	}

	f.start()
	f.shutdown()
	if len(f.a.asked) != 3 {
		t.Errorf("after a restart the assistant was asked %q, want nothing more", f.a.asked)
	}
}

// TestAnswererSendsWhatTheAssistantSays: the assistant's reply is sent as
// it is, its kind apology on a failure included, and each part sent is
// remembered by the id WhatsApp gave it, for a later reply quoting it; a
// message the assistant cannot be asked about gets the apology that says
// why without asking it.
func TestAnswererSendsWhatTheAssistantSays(t *testing.T) {
	f := newAnswerFixture(t)
	long := strings.Repeat("word ", whatsapp.MaxTextLength/5+10)
	f.a.answer = func(in assistant.Inbound) (assistant.Reply, error) {
		if in.Text == "fail" {
			err := apology.ErrOverloaded
			return assistant.Reply{Text: assistant.ErrorMessage(err)}, err
		}
		return assistant.Reply{Text: long}, nil
	}
	f.deliver(erinWaID, "wamid.long", "tell me everything")
	f.deliver(erinWaID, "wamid.fail", "fail")
	body := metaMessage(erinWaID, "wamid.poll", time.Now(), map[string]any{"type": "unsupported", "unsupported": map[string]any{"type": "poll_creation"}})
	r := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	r.Header.Set(whatsapp.SignatureHeader, graphtest.Sign([]byte(e2eAppSecret), body))
	f.srv.ServeHTTP(httptest.NewRecorder(), r)
	f.shutdown()

	sent := f.graph.Sent()
	if len(sent) != 4 || sent[2].Body != assistant.ErrorMessage(apology.ErrOverloaded) || sent[3].Body != apology.Unsupported {
		t.Fatalf("sent %d messages, want the long reply in two parts, the apology of a failure and of an unsupported kind: %+v", len(sent), sent)
	}
	if !slices.Equal(f.a.asked, []string{"tell me everything", "fail"}) {
		t.Errorf("the assistant was asked %q, want the two texts only", f.a.asked)
	}
	for _, m := range sent {
		// The texts are ASCII: a long one is remembered as its first
		// bytes and an ellipsis, within MaxRecentText.
		want := m.Body
		if len(want) > conversation.MaxRecentText {
			want = want[:conversation.MaxRecentText-len("…")] + "…"
		}
		got, err := f.mem.Recall(context.Background(), erin, m.ID)
		if err != nil || got.Text != want || got.Role != conversation.RoleAssistant {
			t.Errorf("part %s sent but remembered as %+v, %v; want the text %q", m.ID, got, err, want)
		}
	}
}

// messagesTotal returns mombot_messages_total's value for outcome and
// reason in m.
func messagesTotal(t *testing.T, m *metrics.Metrics, outcome, reason string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "mombot_messages_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["outcome"] == outcome && labels["reason"] == reason {
				return s.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestAnswererOutcomes: each message is counted once, when its reply is
// sent or given up on, by what the person got: the answer, the answer
// saying its turn was not saved, an apology instead, or nothing (the
// Graph API refused the reply for good).
func TestAnswererOutcomes(t *testing.T) {
	f := newAnswerFixture(t)
	f.a.answer = func(in assistant.Inbound) (assistant.Reply, error) {
		switch in.Text {
		case "unsaved":
			err := fmt.Errorf("assistant: handle: %w: %w", apology.ErrNotSaved, errors.New("store down"))
			return assistant.Reply{Text: "echo: unsaved\n\n" + apology.Message(err)}, err
		case "overloaded", "cut short and unsaved":
			err := fmt.Errorf("assistant: handle: %w", apology.ErrOverloaded)
			if in.Text != "overloaded" {
				err = errors.Join(fmt.Errorf("assistant: handle: %w", apology.ErrCutOff), fmt.Errorf("%w: store down", apology.ErrNotSaved))
			}
			return assistant.Reply{Text: apology.Message(err)}, err
		}
		return assistant.Reply{Text: "echo: " + in.Text}, nil
	}
	for i, text := range []string{"hello", "unsaved", "overloaded", "cut short and unsaved"} {
		f.deliver(erinWaID, fmt.Sprintf("wamid.outcome.%d", i), text)
		waitSent(t, f.graph, i+1, 10*time.Second)
	}
	f.graph.FailNextWith(1, graphtest.Failure{Status: http.StatusBadRequest, Code: 131026})
	f.deliver(erinWaID, "wamid.outcome.refused", "hello again")
	deadline := time.Now().Add(10 * time.Second)
	for messagesTotal(t, f.m, metrics.OutcomeNotSent, "") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	f.shutdown()
	for _, c := range []struct {
		outcome, reason string
		want            float64
	}{
		{metrics.OutcomeAnswered, "", 1},
		{metrics.OutcomeAnswered, metrics.ReasonNotSaved, 1},
		{metrics.OutcomeApologized, "", 2},
		{metrics.OutcomeNotSent, "", 1},
	} {
		if got := messagesTotal(t, f.m, c.outcome, c.reason); got != c.want {
			t.Errorf("mombot_messages_total{outcome=%q,reason=%q} = %v, want %v", c.outcome, c.reason, got, c.want)
		}
	}
}

// A reply booked and never sent (its sender's lock passed to another
// replica) is forgotten once older than delivery.HandledFor; one sent is
// counted once.
func TestOutcomeBookForgetsRepliesNeverSent(t *testing.T) {
	var b outcomeBook
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	answered := outcome{metrics.OutcomeAnswered, ""}
	b.put("wamid.lost", answered, t0)
	b.put("wamid.sent", answered, t0)
	if o, ok := b.take("wamid.sent"); !ok || o != answered {
		t.Fatalf("take(sent) = %v, %v; want %v, true", o, ok, answered)
	}
	if _, ok := b.take("wamid.sent"); ok {
		t.Fatal("an outcome was taken twice")
	}
	// Within HandledFor the pipeline may still send it: kept.
	b.put("wamid.recent", answered, t0.Add(delivery.HandledFor-time.Minute))
	if len(b.m) != 2 {
		t.Fatalf("book holds %d outcomes within HandledFor; want 2", len(b.m))
	}
	b.put("wamid.later", answered, t0.Add(delivery.HandledFor+2*time.Hour))
	if _, ok := b.m["wamid.lost"]; ok {
		t.Error("an outcome older than HandledFor is still booked")
	}
	for _, id := range []string{"wamid.recent", "wamid.later"} {
		if _, ok := b.take(id); !ok {
			t.Errorf("outcome of %s forgotten", id)
		}
	}
}
