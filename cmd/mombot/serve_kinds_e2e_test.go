package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/config"
	"github.com/mombot/mombot/transcription/transcriptiontest"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// metaMessage returns a webhook delivery of one message from the WhatsApp
// id from, in the shape Meta documents for every type
// (https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/payload-examples):
// fields are the message's members besides from, id and timestamp, such as
// {"type": "audio", "audio": {...}}.
func metaMessage(from, id string, at time.Time, fields map[string]any) []byte {
	m := map[string]any{"from": from, "id": id, "timestamp": fmt.Sprint(at.Unix())}
	for k, v := range fields {
		m[k] = v
	}
	body, _ := json.Marshal(map[string]any{"object": "whatsapp_business_account", "entry": []any{map[string]any{
		"id": "102290129340398",
		"changes": []any{map[string]any{"field": "messages", "value": map[string]any{
			"messaging_product": "whatsapp",
			"metadata":          map[string]string{"display_phone_number": "15550783881", "phone_number_id": graphtest.PhoneNumberID},
			"contacts":          []any{map[string]any{"profile": map[string]string{"name": "Erin"}, "wa_id": from}},
			"messages":          []any{m},
		}}},
	}}})
	return body
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServeKindsEndToEnd sends mombot serve, as a process, what a family
// sends on WhatsApp besides text and photos, in Meta's documented shapes,
// and checks what the model is given, what is answered and what is stored.
func TestServeKindsEndToEnd(t *testing.T) {
	const sttKey = "sk-stt-e2e-7d1c0a"
	store := "file:" + filepath.Join(t.TempDir(), "conversations.json")
	f := newServeFixture(t, store, map[string]string{erin: "Erin"})
	stt := transcriptiontest.NewServer(t, sttKey, "Add milk, eggs and two loaves of bread to the grocery list.", "whisper-1")
	var cfg map[string]any
	data, _ := os.ReadFile(f.config)
	json.Unmarshal(data, &cfg)
	cfg["transcription"] = map[string]any{"url": stt.URL, "model": "whisper-1", "max_duration": "3m"}
	data, _ = json.Marshal(cfg)
	if err := os.WriteFile(f.config, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f.extraEnv = []string{config.TranscriptionKeyEnv + "=" + sttKey}
	// A conversation expires after 2 s, so that a reply to an earlier
	// message is tested after the memory has gone.
	f.args = []string{"--timeout", "2s"}
	f.claude.Respond(func(r anthropictest.Request) anthropictest.Response {
		return anthropictest.Text(fmt.Sprintf("answer %d", len(f.claude.Requests())))
	})
	f.graph.AddMedia("1282843452909218", readFixture(t, "voice-note.ogg"), "audio/ogg")
	f.graph.AddMedia("1003383421387260", readFixture(t, "newsletter.pdf"), "application/pdf")
	p := f.start()

	run := time.Now().UnixNano()
	n := 0
	// send delivers one message and returns the last request the model
	// got for it, waiting for the reply to be sent.
	send := func(t *testing.T, fields map[string]any, at time.Time) (anthropictest.Request, string) {
		t.Helper()
		n++
		before := len(f.graph.Sent())
		if code := p.deliver(metaMessage(erinWaID, fmt.Sprintf("wamid.kinds.%d.%d", run, n), at, fields)); code != 200 {
			t.Fatalf("delivery: %d", code)
		}
		sent := waitSent(t, f.graph, before+1, 20*time.Second)
		reqs := f.claude.Requests()
		if len(reqs) == 0 {
			return anthropictest.Request{}, sent[len(sent)-1].Body
		}
		return reqs[len(reqs)-1], sent[len(sent)-1].Body
	}
	lastUser := func(r anthropictest.Request) string {
		return string(r.Params.Messages[len(r.Params.Messages)-1])
	}
	history := func() string { return f.mombot("history", "show", "--json", erin) }

	t.Run("voice note", func(t *testing.T) {
		calls := len(f.claude.Requests())
		r, _ := send(t, map[string]any{"type": "audio", "audio": map[string]any{
			"mime_type": "audio/ogg; codecs=opus", "sha256": "VJ9fHT3b3DyNGn9gxuGbRXEfHuqX/4u8pQ1gFAPdl4E=", "id": "1282843452909218", "voice": true}}, time.Now())
		if len(f.claude.Requests()) != calls+1 {
			t.Fatalf("the model was not asked")
		}
		if !strings.Contains(lastUser(r), "[From Erin]: [Voice note, transcribed] Add milk, eggs and two loaves of bread to the grocery list.") {
			t.Errorf("the model got %s", lastUser(r))
		}
		reqs := stt.Requests()
		if len(reqs) != 1 || reqs[0].Model != "whisper-1" || string(reqs[0].Audio) != string(readFixture(t, "voice-note.ogg")) {
			t.Errorf("transcription requests: %d", len(reqs))
		}
		if h := history(); !strings.Contains(h, "[Voice note, transcribed] Add milk") || strings.Contains(h, "OggS") {
			t.Errorf("stored: %s", h)
		}
	})

	t.Run("PDF with a caption", func(t *testing.T) {
		r, _ := send(t, map[string]any{"type": "document", "document": map[string]any{
			"caption": "When is the bake sale?", "filename": "newsletter.pdf", "mime_type": "application/pdf",
			"sha256": "oO8j8d4hMTHQ2M7TNfz1gzcd6UTGaCMpWFmyMzZ6ZQk=", "id": "1003383421387260"}}, time.Now())
		u := lastUser(r)
		if !strings.Contains(u, `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK`) ||
			!strings.Contains(u, `"title":"newsletter.pdf"`) || !strings.Contains(u, "[From Erin]: When is the bake sale?") {
			t.Errorf("the model got %.300s", u)
		}
		if h := history(); !strings.Contains(h, "[Document sent: newsletter.pdf]") || strings.Contains(h, "JVBERi0") {
			t.Errorf("stored: %s", h)
		}
	})

	t.Run("location, contacts and a video's caption", func(t *testing.T) {
		r, _ := send(t, map[string]any{"type": "location", "location": map[string]any{
			"address": "101 Forest Ave, Palo Alto, CA 94301", "latitude": 37.483307, "longitude": -122.148981, "name": "Philz Coffee", "url": "https://www.philzcoffee.com/"}}, time.Now())
		if want := "[Location shared: Philz Coffee, 101 Forest Ave, Palo Alto, CA 94301, latitude 37.483307, longitude -122.148981, https://www.philzcoffee.com/]"; !strings.Contains(lastUser(r), want) {
			t.Errorf("the model got %s", lastUser(r))
		}
		r, _ = send(t, map[string]any{"type": "contacts", "contacts": []any{map[string]any{
			"name":   map[string]any{"formatted_name": "Barbara J. Johnson", "first_name": "Barbara", "last_name": "Johnson"},
			"org":    map[string]any{"company": "Maple Street School", "title": "Teacher"},
			"phones": []any{map[string]any{"phone": "+1 (940) 555-1234", "type": "HOME"}},
			"emails": []any{map[string]any{"email": "bjohnson@example.com", "type": "WORK"}}}}}, time.Now())
		if want := "[Contact card: Barbara J. Johnson; Maple Street School, Teacher; phone +1 (940) 555-1234 (HOME); email bjohnson@example.com (WORK)]"; !strings.Contains(lastUser(r), want) {
			t.Errorf("the model got %s", lastUser(r))
		}
		r, _ = send(t, map[string]any{"type": "video", "video": map[string]any{
			"caption": "Look at her first steps!", "mime_type": "video/mp4", "sha256": "7R9Q0P8b3dwQhV2RjKX6nVq7GqL3Z6D1q2Gf1zY8kAk=", "id": "1003383421387270"}}, time.Now())
		if want := "[Video sent: you cannot watch it, only read its caption]\\nLook at her first steps!"; !strings.Contains(lastUser(r), want) {
			t.Errorf("the model got %s", lastUser(r))
		}
	})

	t.Run("stickers and edits get no reply", func(t *testing.T) {
		calls, replies := len(f.claude.Requests()), len(f.graph.Sent())
		p.deliver(metaMessage(erinWaID, fmt.Sprintf("wamid.kinds.%d.sticker", run), time.Now(), map[string]any{
			"type": "sticker", "sticker": map[string]any{"mime_type": "image/webp", "sha256": "dVZ8r2OZLx2m6DSNjAIdVwzYmH8tvjN4cs1NqO6LGmc=", "id": "1003383421387280", "animated": false}}))
		p.deliver(metaMessage(erinWaID, fmt.Sprintf("wamid.kinds.%d.edit", run), time.Now(), map[string]any{
			"type": "unsupported", "unsupported": map[string]any{"type": "edit"},
			"errors": []any{map[string]any{"code": 131051, "title": "Message type unknown", "message": "Message type unknown", "error_data": map[string]any{"details": "Message type is currently not supported."}}}}))
		// A message after them is answered first in line: they were
		// passed over, not queued.
		_, reply := send(t, map[string]any{"type": "text", "text": map[string]any{"body": "still there?"}}, time.Now())
		if got := len(f.graph.Sent()); got != replies+1 || len(f.claude.Requests()) != calls+1 || !strings.HasPrefix(reply, "answer") {
			t.Errorf("%d replies and %d model calls for a sticker, an edit and a text; want 1 and 1", got-replies, len(f.claude.Requests())-calls)
		}
		poll := map[string]any{"type": "unsupported", "unsupported": map[string]any{"type": "poll_creation"}}
		if _, reply := send(t, poll, time.Now()); reply != apology.Unsupported {
			t.Errorf("another unsupported kind: %q, want %q", reply, apology.Unsupported)
		}
	})

	t.Run("a message dated a year ahead", func(t *testing.T) {
		r, _ := send(t, map[string]any{"type": "text", "text": map[string]any{"body": "what day is it?"}}, time.Now().AddDate(1, 0, 0))
		if year := fmt.Sprint(time.Now().AddDate(1, 0, 0).UTC().Year()); strings.Contains(lastUser(r), " "+year+" ") && year != fmt.Sprint(time.Now().UTC().Year()) {
			t.Errorf("the model got next year's date: %s", lastUser(r))
		}
		if stamp := "[" + time.Now().UTC().Format("Mon 2 Jan 2006"); !strings.Contains(lastUser(r), stamp) {
			t.Errorf("the model got %s, want today's date %s", lastUser(r), stamp)
		}
	})

	t.Run("a forwarded message", func(t *testing.T) {
		r, _ := send(t, map[string]any{"type": "text", "context": map[string]any{"forwarded": true},
			"text": map[string]any{"body": "Clear the grocery list"}}, time.Now())
		if want := `[From Erin]: [Forwarded message]\nClear the grocery list`; !strings.Contains(lastUser(r), want) {
			t.Errorf("the model got %s\nwant it to hold %s", lastUser(r), want)
		}
	})

	t.Run("a reply to one of mombot's messages after the memory expired and a restart", func(t *testing.T) {
		_, reply := send(t, map[string]any{"type": "text", "text": map[string]any{"body": "find me a chicken dinner"}}, time.Now())
		sent := f.graph.Sent()
		ours := sent[len(sent)-1]
		if ours.Body != reply || ours.ID == "" {
			t.Fatalf("the reply %+v", ours)
		}
		p.stop()
		time.Sleep(2500 * time.Millisecond) // past the 2 s timeout
		p = f.start()
		r, _ := send(t, map[string]any{"type": "text", "context": map[string]any{"from": "15550783881", "id": ours.ID},
			"text": map[string]any{"body": "yes, that one"}}, time.Now())
		if len(r.Params.Messages) != 1 {
			t.Errorf("the model got %d messages, want 1: the conversation had expired", len(r.Params.Messages))
		}
		if want := fmt.Sprintf(`[From Erin]: [Replying to your message: \"%s\"] yes, that one`, reply); !strings.Contains(lastUser(r), want) {
			t.Errorf("the model got %s\nwant it to hold %s", lastUser(r), want)
		}
	})
	p.stop()
	if logs := p.logs.String(); strings.Contains(logs, sttKey) {
		t.Errorf("the transcription key reached the log")
	}
}
