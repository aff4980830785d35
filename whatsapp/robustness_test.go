package whatsapp_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/whatsapp"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// A payload with one malformed message among good ones is accepted and
// the good ones answered: a 400 would have Meta redeliver all of it, to the
// same answer, for a week.
func TestOneBadMessageDoesNotCostTheOthers(t *testing.T) {
	h := newHarness(t)
	at := sampleTime.Add(-time.Second)
	body := payload([]string{change(sheenaWaID,
		textMessage(sheenaWaID, "wamid.good1", "first", at),
		`{"from":"16505551234","id":"wamid.bad","timestamp":"yesterday","type":"text","text":{"body":"lost"}}`,
		`"not a message"`,
		textMessage(sheenaWaID, "wamid.good2", "second", at),
	)})
	if code := h.post(body); code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	h.shutdown()
	if got, want := h.bodies(), []string{"echo: first", "echo: second"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}

// A reply goes out through a pair rate limit, a dropped connection and a
// momentarily unavailable server.
func TestRepliesGoThroughTransientFailures(t *testing.T) {
	h := newHarness(t)
	h.graph.FailNextWith(1, graphtest.Failure{Status: http.StatusBadRequest, Code: 131056})
	h.graph.FailNextWith(1, graphtest.Failure{Drop: true})
	h.graph.FailNextWith(1, graphtest.Failure{Status: http.StatusServiceUnavailable, Code: 133004})
	h.postFile("text.json")
	h.shutdown()
	if got := h.bodies(); len(got) != 1 || got[0] != "echo: Does it come in another color?" {
		t.Errorf("sent %q, want the reply", got)
	}
	if n := h.graph.Attempts(); n != 4 {
		t.Errorf("%d attempts, want 4", n)
	}
	if strings.Contains(h.logs.String(), "reply not sent") {
		t.Error("a reply that went out was logged as not sent")
	}
}

// A reply of emoji, which count two each toward WhatsApp's limit, is cut
// into parts the Graph API accepts.
func TestEmojiRepliesFitInUTF16(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("🌻", 3000) // 3,000 characters, 6,000 UTF-16 units
	h.resp.respond = func(_, _ context.Context, _ whatsapp.Inbound) (string, error) { return long, nil }
	h.postFile("text.json")
	h.shutdown()
	sent := h.bodies()
	if len(sent) != 2 {
		t.Fatalf("sent %d parts, want 2", len(sent))
	}
	for i, b := range sent {
		if n := utf16Len(b); n > whatsapp.MaxTextLength {
			t.Errorf("part %d is %d long", i, n)
		}
	}
	if strings.Join(sent, "") != long {
		t.Error("the parts do not add up to the reply")
	}
	if n := h.graph.Attempts(); n != 2 {
		t.Errorf("%d attempts for 2 parts: the fake refused some", n)
	}
}

// The malformed elements of a delivery are counted in the log, so that a
// change in Meta's payloads does not go unnoticed.
func TestMalformedMessagesAreLogged(t *testing.T) {
	h := newHarness(t)
	at := sampleTime.Add(-time.Second)
	body := payload([]string{change(sheenaWaID,
		`"not a message"`,
		textMessage(sheenaWaID, "wamid.good", "hello", at),
	)})
	if code := h.post(body); code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	h.shutdown()
	logs := h.logs.String()
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "malformed=1") {
		t.Errorf("the malformed message is not counted in a warning:\n%s", logs)
	}
}

// A failed status, WhatsApp's only report of a reply it could not deliver,
// is logged as a warning with its code, and the recipient masked.
func TestFailedStatusIsLogged(t *testing.T) {
	h := newHarness(t)
	h.postFile("status_failed.json")
	h.shutdown()
	logs := h.logs.String()
	var line string
	for l := range strings.Lines(logs) {
		if strings.Contains(l, "not delivered") {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, "level=WARN") || !strings.Contains(line, "131047") {
		t.Fatalf("no warning with the failure's code:\n%s", logs)
	}
	if strings.Contains(line, sheenaWaID) {
		t.Errorf("the recipient's full number was logged: %s", line)
	}
	if len(h.bodies()) != 0 {
		t.Errorf("a status update was answered: %q", h.bodies())
	}
}
