package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

const (
	erin      = "+14155551234"
	erinWaID  = "14155551234"
	jasonWaID = "14155555678"
)

// TestServeEndToEnd runs mombot serve as a process, with a JSON file store,
// and talks to it as Meta does: signed webhooks in, replies out through the
// fake Graph API, the model behind the fake Messages API.
func TestServeEndToEnd(t *testing.T) {
	store := "file:" + filepath.Join(t.TempDir(), "conversations.json")
	f := newServeFixture(t, store, map[string]string{erin: "Erin", "+14155555678": "Jason"})
	echoMarkers(f.claude, 0)
	run := time.Now().UnixNano()
	wamid := func(n int) string { return fmt.Sprintf("wamid.e2e.%d.%d", run, n) }
	msg := func(n int, key, text string) inMessage {
		return inMessage{From: erinWaID, ID: wamid(n), Text: "[k=" + key + "] " + text}
	}
	p := f.start()

	t.Run("healthz and the verification handshake", func(t *testing.T) {
		if code, body := p.get("/healthz"); code != 200 || body != "ok\n" {
			t.Errorf("/healthz: %d %q", code, body)
		}
		q := url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {e2eVerifyToken}, "hub.challenge": {"1158201444"}}
		if code, body := p.get("/webhook?" + q.Encode()); code != 200 || body != "1158201444" {
			t.Errorf("verification: %d %q", code, body)
		}
		q.Set("hub.verify_token", "wrong")
		if code, _ := p.get("/webhook?" + q.Encode()); code != 403 {
			t.Errorf("verification with a wrong token: %d, want 403", code)
		}
	})

	// A message, then a follow-up that carries the first turn. The first
	// was sent two hours ago, and reaches the model stamped with that time,
	// not with the time it was handled.
	first := msg(1, "e1", "what's for dinner?")
	first.Time = time.Now().Add(-2 * time.Hour)
	if code := p.deliver(webhookPayload(first)); code != 200 {
		t.Fatalf("delivery: %d", code)
	}
	sent := waitSent(t, f.graph, 1, 20*time.Second)
	if sent[0].To != erinWaID || sent[0].Body != "re e1" {
		t.Fatalf("reply: %+v, want %q to %s", sent[0], "re e1", erinWaID)
	}
	p.deliver(webhookPayload(msg(2, "e2", "and for dessert?")))
	waitSent(t, f.graph, 2, 20*time.Second)
	reqs := f.claude.Requests()
	stamp := "[" + first.Time.UTC().Format("Mon 2 Jan 2006 15:04 MST") + "] [From Erin]:"
	if !bytes.Contains(reqs[0].Params.Messages[0], []byte(stamp)) {
		t.Errorf("the first message is not stamped %q: %s", stamp, reqs[0].Params.Messages[0])
	}
	if got := len(reqs[1].Params.Messages); got != 3 {
		t.Fatalf("the follow-up sent %d messages, want 3 (the first turn and itself)", got)
	}
	if got, want := markers(reqs[1].Params.Messages), []string{"e1", "e2"}; !slices.Equal(got, want) {
		t.Errorf("the follow-up's user messages carry %q, want %q", got, want)
	}
	if !bytes.Contains(reqs[1].Params.Messages[1], []byte("re e1")) {
		t.Errorf("the follow-up lacks the first reply: %s", reqs[1].Params.Messages[1])
	}

	// The same delivery three times at once, then a message whose reply
	// shows the three were handled: one sender's messages go in order.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if code := p.deliver(webhookPayload(msg(3, "e3", "add milk"))); code != 200 {
				t.Errorf("redelivery: %d", code)
			}
		})
	}
	wg.Wait()

	// Deliveries that are not Meta's: nothing is stored, the model is not
	// asked, and nobody is answered.
	bad := webhookPayload(inMessage{From: jasonWaID, ID: wamid(100), Text: "[k=forged] send me the lists"})
	if code := p.post(bad, graphtest.Sign([]byte("not-the-app-secret"), bad)); code != 403 {
		t.Errorf("a delivery signed with another secret: %d, want 403", code)
	}
	if code := p.post(bad, ""); code != 401 {
		t.Errorf("an unsigned delivery: %d, want 401", code)
	}
	tampered := webhookPayload(msg(101, "tampered", "forged"))
	if code := p.post(tampered, graphtest.Sign([]byte(e2eAppSecret), webhookPayload(msg(101, "e0", "hi")))); code != 403 {
		t.Errorf("a delivery with another body's signature: %d, want 403", code)
	}
	// Nor is a stranger answered.
	p.deliver(webhookPayload(inMessage{From: "19995550000", ID: wamid(102), Text: "[k=stranger] hi"}))

	p.deliver(webhookPayload(msg(4, "e4", "thanks")))
	waitSent(t, f.graph, 4, 20*time.Second)

	// A photo: the server downloads it from the Graph API, the model sees
	// it, and the store keeps a placeholder.
	photo := pngBytes(t)
	f.graph.AddMedia("1003383421387256", photo, "image/png")
	img := msg(5, "img", "what plant is this?")
	img.Image = "1003383421387256"
	p.deliver(webhookPayload(img))
	waitSent(t, f.graph, 5, 20*time.Second)
	reqs = f.claude.Requests()
	last := reqs[len(reqs)-1].Params.Messages
	if !bytes.Contains(last[len(last)-1], []byte(`"type":"image"`)) ||
		!bytes.Contains(last[len(last)-1], []byte(base64.StdEncoding.EncodeToString(photo))) {
		t.Errorf("the photo did not reach the model: %s", last[len(last)-1])
	}

	// Restart: a graceful stop exits 0, and the new process remembers the
	// messages the old one handled.
	p.stop()
	p = f.start()
	for _, n := range []int{1, 3, 5} {
		m := msg(n, "dup", "")
		if n == 5 {
			m = img
		}
		if code := p.deliver(webhookPayload(m)); code != 200 {
			t.Errorf("redelivery after the restart: %d", code)
		}
	}
	p.deliver(webhookPayload(msg(6, "e6", "still there?")))
	waitSent(t, f.graph, 6, 20*time.Second)

	// The store, as mombot history shows it while the server runs.
	var hist []json.RawMessage
	if err := json.Unmarshal([]byte(f.mombot("history", "show", "--json", erin)), &hist); err != nil {
		t.Fatal(err)
	}
	if got, want := markers(hist), []string{"e1", "e2", "e3", "e4", "img", "e6"}; !slices.Equal(got, want) {
		t.Errorf("Erin's stored messages carry %q, want %q", got, want)
	}
	stored, _ := json.Marshal(hist)
	if !bytes.Contains(stored, []byte(conversation.ImagePlaceholder)) {
		t.Errorf("no %q in the stored conversation:\n%s", conversation.ImagePlaceholder, stored)
	}
	if bytes.Contains(stored, []byte(base64.StdEncoding.EncodeToString(photo))) {
		t.Error("the photo's bytes were stored")
	}
	if h := historyOf(t, store, "+14155555678"); len(h) != 0 {
		t.Errorf("the forged delivery was stored: %v", h)
	}

	p.stop()
	var bodies []string
	for _, m := range f.graph.Sent() {
		bodies = append(bodies, m.Body)
		if m.To != erinWaID {
			t.Errorf("a reply went to %s", m.To)
		}
	}
	if want := []string{"re e1", "re e2", "re e3", "re e4", "re img", "re e6"}; !slices.Equal(bodies, want) {
		t.Errorf("replies sent: %q, want %q", bodies, want)
	}
	if n := len(f.claude.Requests()); n != 6 {
		t.Errorf("the model was asked %d times, want 6", n)
	}
	if logs := p.logs.String(); !strings.Contains(logs, "duplicate delivery skipped") {
		t.Errorf("the redeliveries after the restart were not skipped as duplicates:\n%s", logs)
	}
}

// pngBytes returns a small PNG image.
func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for i := range 4 {
		img.Set(i, i, color.RGBA{G: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
