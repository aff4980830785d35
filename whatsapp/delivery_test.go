package whatsapp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mombot/mombot/whatsapp"
)

const (
	ann, annWaID = "+15550000001", "15550000001"
	bob, bobWaID = "+15550000002", "15550000002"
)

func TestEveryEntryChangeAndMessage(t *testing.T) {
	h := newHarness(t)
	at := sampleTime.Add(-time.Minute)
	statuses := `{"field":"messages","value":{"metadata":{"phone_number_id":"` + h.cfg.PhoneNumberID + `"},` +
		`"statuses":[{"id":"wamid.S","status":"read","timestamp":"1749416383","recipient_id":"15550000001"}]}}`
	other := `{"field":"account_update","value":{"event":"VERIFIED_ACCOUNT"}}`
	h.post(payload(
		[]string{
			change(annWaID, textMessage(annWaID, "wamid.a1", "one", at), textMessage(annWaID, "wamid.a2", "two", at)),
			statuses,
			other,
		},
		[]string{change(bobWaID, textMessage(bobWaID, "wamid.b1", "three", at))},
	))
	h.shutdown()
	var got []string
	for _, in := range h.resp.inbound() {
		got = append(got, in.From+" "+in.Text)
	}
	slices.Sort(got)
	if want := []string{ann + " one", ann + " two", bob + " three"}; !slices.Equal(got, want) {
		t.Errorf("responder got %q, want %q", got, want)
	}
	if n := len(h.graph.Sent()); n != 3 {
		t.Errorf("sent %d replies, want 3", n)
	}
}

func TestOnlyTheFamilyIsAnswered(t *testing.T) {
	h := newHarness(t)
	const strangerWaID = "447700900123"
	h.post(text(strangerWaID, "wamid.stranger", "hello?"))
	h.shutdown()
	if n := len(h.resp.inbound()); n != 0 {
		t.Errorf("responder called %d times for a stranger", n)
	}
	if n := h.graph.Attempts(); n != 0 {
		t.Errorf("%d replies sent to a stranger", n)
	}
	logs := h.logs.String()
	if strings.Contains(logs, strangerWaID) {
		t.Errorf("the stranger's number was logged in full:\n%s", logs)
	}
	if !strings.Contains(logs, "0123") || !strings.Contains(logs, "outside the family") {
		t.Errorf("the stranger was not logged, masked:\n%s", logs)
	}
}

func TestOldMessagesAreSkipped(t *testing.T) {
	h := newHarness(t, func(c *setup) { c.MaxAge = time.Hour })
	old := payload([]string{change(annWaID,
		textMessage(annWaID, "wamid.old", "from yesterday", sampleTime.Add(-2*time.Hour)),
		textMessage(annWaID, "wamid.new", "from now", sampleTime.Add(-59*time.Minute)),
	)})
	h.post(old)
	h.shutdown()
	if got := h.bodies(); !slices.Equal(got, []string{"echo: from now"}) {
		t.Errorf("sent %q, want only the recent message answered", got)
	}
	if !strings.Contains(h.logs.String(), "too old") {
		t.Error("the skipped message was not logged")
	}
}

func TestDefaultMaxAgeIsADay(t *testing.T) {
	h := newHarness(t, func(c *setup) {
		c.Now = func() time.Time { return time.Unix(sampleUnix, 0).Add(25 * time.Hour) }
	})
	h.postFile("text.json")
	h.shutdown()
	if n := h.graph.Attempts(); n != 0 {
		t.Errorf("a 25-hour-old message was answered")
	}
}

func TestMessageToAnotherBusinessNumberIsIgnored(t *testing.T) {
	h := newHarness(t, func(c *setup) { c.PhoneNumberID = "999" })
	h.postFile("text.json")
	h.shutdown()
	if n := h.graph.Attempts(); n != 0 {
		t.Errorf("%d replies sent for another number's message", n)
	}
}

func TestDuplicateDeliveriesAreAnsweredOnce(t *testing.T) {
	h := newHarness(t)
	for range 3 {
		h.postFile("text.json")
	}
	h.shutdown()
	if n := len(h.graph.Sent()); n != 1 {
		t.Fatalf("a webhook delivered 3 times was answered %d times", n)
	}

	// Meta keeps redelivering across our restarts.
	h.restart()
	for range 3 {
		h.postFile("text.json")
	}
	h.shutdown()
	if n := len(h.graph.Sent()); n != 1 {
		t.Fatalf("after a restart, the delivery was answered again (%d replies)", n)
	}
	if n := len(h.resp.inbound()); n != 1 {
		t.Errorf("responder called %d times", n)
	}
}

func TestEachSendersMessagesInOrder(t *testing.T) {
	bobDone := make(chan struct{})
	var mu sync.Mutex
	active := map[string]int{}
	h := newHarness(t)
	h.resp.respond = func(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
		mu.Lock()
		active[in.From]++
		if active[in.From] > 1 {
			t.Errorf("two messages of %s handled at once", in.From)
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			active[in.From]--
			mu.Unlock()
		}()
		switch in.Text {
		case "a1":
			// Ann's first message waits for Bob's: senders run in
			// parallel, or this never returns.
			select {
			case <-bobDone:
			case <-time.After(10 * time.Second):
				t.Error("Bob's message was not handled while Ann's was")
			}
		case "b1":
			defer close(bobDone)
		}
		return "re " + in.Text, nil
	}
	at := sampleTime.Add(-time.Minute)
	for i := 1; i <= 5; i++ {
		id, body := fmt.Sprintf("wamid.a%d", i), fmt.Sprintf("a%d", i)
		h.post(payload([]string{change(annWaID, textMessage(annWaID, id, body, at))}))
	}
	h.post(text(bobWaID, "wamid.b1", "b1"))
	h.shutdown()

	var toAnn []string
	for _, m := range h.graph.Sent() {
		if m.To == annWaID {
			toAnn = append(toAnn, m.Body)
		}
	}
	if want := []string{"re a1", "re a2", "re a3", "re a4", "re a5"}; !slices.Equal(toAnn, want) {
		t.Errorf("replies to Ann %q, want %q", toAnn, want)
	}
}

func TestLongRepliesAreSplit(t *testing.T) {
	h := newHarness(t)
	para := strings.TrimSpace(strings.Repeat("Ünïcödé words count as one character each. ", 30))
	long := strings.TrimSpace(strings.Repeat(para+"\n\n", 8))
	h.resp.respond = func(_, _ context.Context, _ whatsapp.Inbound) (string, error) { return long, nil }
	h.postFile("text.json")
	h.shutdown()
	sent := h.bodies()
	if len(sent) < 3 {
		t.Fatalf("a %d-character reply was sent in %d parts", utf8.RuneCountInString(long), len(sent))
	}
	for i, b := range sent {
		if n := utf8.RuneCountInString(b); n > whatsapp.MaxTextLength {
			t.Errorf("part %d has %d characters", i, n)
		}
	}
	if got := strings.Join(sent, "\n\n"); got != long {
		t.Error("the parts do not add up to the reply")
	}
}

func TestSendRetries(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		fail      int
		sent      int
		attempts  int
		logReason string
	}{
		{"429 then success", http.StatusTooManyRequests, 2, 1, 3, ""},
		{"500 then success", http.StatusInternalServerError, 1, 1, 2, ""},
		{"503 every time", http.StatusServiceUnavailable, 10, 0, whatsapp.DefaultMaxAttempts, "Please retry your request later"},
		{"400 is not retried", http.StatusBadRequest, 1, 0, 1, "Invalid parameter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.graph.FailNext(tt.fail, tt.status)
			h.postFile("text.json")
			h.shutdown()
			if n := len(h.graph.Sent()); n != tt.sent {
				t.Errorf("sent %d, want %d", n, tt.sent)
			}
			if n := h.graph.Attempts(); n != tt.attempts {
				t.Errorf("%d attempts, want %d", n, tt.attempts)
			}
			logs := h.logs.String()
			if tt.logReason != "" && (!strings.Contains(logs, "reply not sent") || !strings.Contains(logs, tt.logReason)) {
				t.Errorf("the failed send was not logged with the reason %q", tt.logReason)
			}
		})
	}
}

func TestSendGivesUpWithTheContext(t *testing.T) {
	h := newHarness(t, func(c *setup) { c.RetryDelay = time.Hour; c.MaxAttempts = 3 })
	h.graph.FailNext(1, http.StatusTooManyRequests)
	h.postFile("text.json")
	for h.graph.Attempts() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	h.shut = true
	if n := h.graph.Attempts(); n != 1 {
		t.Errorf("%d attempts after the context ended, want 1", n)
	}
}

func TestWrongAccessTokenIsLogged(t *testing.T) {
	h := newHarness(t, func(c *setup) { c.AccessToken = "EAAwrong" })
	h.graph.AddMedia("1003383421387256", []byte("jpeg"), "image/jpeg")
	h.postFile("image.json")
	h.postFile("text.json")
	h.shutdown()
	if n := len(h.resp.inbound()); n != 1 {
		t.Errorf("responder called %d times, want once (the text; the photo could not be fetched)", n)
	}
	logs := h.logs.String()
	for _, want := range []string{"photo download failed", "reply not sent", "Invalid OAuth access token", "code=190"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if strings.Contains(logs, "EAAwrong") {
		t.Error("the access token was logged")
	}
}

func TestFailuresGetAKindReply(t *testing.T) {
	t.Run("photo not found", func(t *testing.T) {
		h := newHarness(t) // no media added
		h.postFile("image.json")
		h.shutdown()
		if n := len(h.resp.inbound()); n != 0 {
			t.Errorf("responder called without the photo")
		}
		if sent := h.bodies(); len(sent) != 1 || !strings.Contains(sent[0], "couldn't open that photo") {
			t.Errorf("sent %q", sent)
		}
		if !strings.Contains(h.logs.String(), "does not exist") {
			t.Error("the Graph API's reason was not logged")
		}
	})
	t.Run("empty reply", func(t *testing.T) {
		h := newHarness(t)
		h.resp.respond = func(_, _ context.Context, _ whatsapp.Inbound) (string, error) { return " \n", nil }
		h.postFile("text.json")
		h.shutdown()
		if n := h.graph.Attempts(); n != 0 {
			t.Errorf("an empty reply was sent")
		}
	})
}

func TestShutdown(t *testing.T) {
	h := newHarness(t)
	started, release := make(chan struct{}), make(chan struct{})
	h.resp.respond = func(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
		close(started)
		<-release
		return "done", nil
	}
	h.postFile("text.json")
	<-started
	shutdown := make(chan error)
	go func() { shutdown <- h.srv.Shutdown(context.Background()) }()
	h.shut = true

	// New deliveries are refused so that Meta delivers them again later.
	for h.do(httptest.NewRequest(http.MethodGet, "/healthz", nil)).Code != http.StatusServiceUnavailable {
		time.Sleep(time.Millisecond)
	}
	if code := h.post(text(annWaID, "wamid.late", "late")); code != http.StatusServiceUnavailable {
		t.Errorf("delivery during shutdown: status %d, want 503", code)
	}
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned (%v) while a message was in flight", err)
	default:
	}
	close(release)
	if err := <-shutdown; err != nil {
		t.Fatal(err)
	}
	if got := h.bodies(); !slices.Equal(got, []string{"done"}) {
		t.Errorf("after Shutdown, sent %q, want the in-flight reply", got)
	}
}

func TestShutdownDeadlineCancelsInFlight(t *testing.T) {
	h := newHarness(t)
	started := make(chan struct{})
	h.resp.respond = func(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}
	h.postFile("text.json")
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	h.shut = true
}

func TestHealthz(t *testing.T) {
	var down error
	h := newHarness(t, func(c *setup) {
		c.Health = func(context.Context) error { return down }
	})
	w := h.do(httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if w.Code != http.StatusOK || w.Body.String() != "ok\n" {
		t.Errorf("healthz: %d %q", w.Code, w.Body.String())
	}
	down = errors.New("memory: redis: dial tcp 10.0.3.7:6379: connection refused")
	for range 2 {
		w = h.do(httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if body := w.Body.String(); w.Code != http.StatusOK || !strings.HasPrefix(body, "degraded") {
			t.Errorf("healthz with a failing dependency: %d %q, want 200 and degraded", w.Code, body)
		}
		if body := w.Body.String(); strings.Contains(body, "10.0.3.7") || strings.Contains(body, "redis") {
			t.Errorf("healthz shows the error's text to the public: %q", body)
		}
	}
	// The detail is logged, once while it lasts.
	if n := strings.Count(h.logs.String(), "10.0.3.7"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, h.logs.String())
	}
	down = nil
	if w = h.do(httptest.NewRequest(http.MethodGet, "/healthz", nil)); w.Body.String() != "ok\n" {
		t.Errorf("healthz once the dependency is back: %q", w.Body.String())
	}
	if !strings.Contains(h.logs.String(), "health check passes again") {
		t.Error("the recovery was not logged")
	}
}
