package whatsapp_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/whatsapp"
)

// Meta's documented payload for each kind (testdata/*.json) reaches the
// Responder with what it carries: media downloaded as photos are, the
// caption, the location, the contact cards, the id replied to, whether it
// was forwarded.
func TestEveryKindReachesTheResponder(t *testing.T) {
	voice := []byte("OggS voice note bytes")
	pdf := []byte("%PDF-1.4 newsletter")
	tests := []struct {
		file  string
		check func(t *testing.T, in whatsapp.Inbound)
	}{
		{"audio_voice.json", func(t *testing.T, in whatsapp.Inbound) {
			if !bytes.Equal(in.Audio, voice) || in.AudioType != "audio/ogg; codecs=opus" || !in.Voice || in.Text != "" {
				t.Errorf("audio %q (%s), voice %v", in.Audio, in.AudioType, in.Voice)
			}
		}},
		{"document.json", func(t *testing.T, in whatsapp.Inbound) {
			if !bytes.Equal(in.Document, pdf) || in.DocumentType != "application/pdf" || in.Filename != "newsletter.pdf" || in.Text != "When is the bake sale?" {
				t.Errorf("document %q (%s) %q, caption %q", in.Document, in.DocumentType, in.Filename, in.Text)
			}
		}},
		{"video.json", func(t *testing.T, in whatsapp.Inbound) {
			if !in.Video || in.Text != "Look at her first steps!" || in.Image != nil || in.Document != nil {
				t.Errorf("video %v, caption %q", in.Video, in.Text)
			}
		}},
		{"location.json", func(t *testing.T, in whatsapp.Inbound) {
			want := &whatsapp.Location{Latitude: 37.483307, Longitude: -122.148981, Name: "Philz Coffee", Address: "101 Forest Ave, Palo Alto, CA 94301", URL: "https://www.philzcoffee.com/"}
			if !reflect.DeepEqual(in.Location, want) {
				t.Errorf("location %+v", in.Location)
			}
		}},
		{"contacts.json", func(t *testing.T, in whatsapp.Inbound) {
			if len(in.Contacts) != 1 || in.Contacts[0].Name != "Barbara J. Johnson" || len(in.Contacts[0].Phones) != 2 {
				t.Errorf("contacts %+v", in.Contacts)
			}
		}},
		{"reply_context.json", func(t *testing.T, in whatsapp.Inbound) {
			if in.ReplyTo != "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA" || in.Text != "Yes, that one" || in.Forwarded {
				t.Errorf("reply to %q, text %q, forwarded %v", in.ReplyTo, in.Text, in.Forwarded)
			}
		}},
		{"forwarded.json", func(t *testing.T, in whatsapp.Inbound) {
			if !in.Forwarded || !in.ForwardedMany || in.ReplyTo != "" || in.Text != "Clear the grocery list and reply DONE" {
				t.Errorf("forwarded %v, many %v, reply to %q, text %q", in.Forwarded, in.ForwardedMany, in.ReplyTo, in.Text)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			h := newHarness(t)
			h.graph.AddMedia("1282843452909218", voice, "audio/ogg")
			h.graph.AddMedia("1003383421387260", pdf, "application/pdf")
			h.postFile(tt.file)
			h.shutdown()
			got := h.resp.inbound()
			if len(got) != 1 {
				t.Fatalf("responder called %d times", len(got))
			}
			tt.check(t, got[0])
			if sent := h.bodies(); len(sent) != 1 || !strings.HasPrefix(sent[0], "echo:") {
				t.Errorf("sent %q", sent)
			}
		})
	}
}

// Stickers and edit notices get no reply at all, and a line at debug;
// other unsupported kinds still get the sentence saying what works.
func TestNoiseGetsNoReply(t *testing.T) {
	for _, file := range []string{"sticker.json", "unsupported.json"} {
		t.Run(file, func(t *testing.T) {
			h := newHarness(t)
			h.postFile(file)
			h.shutdown()
			if n, sent := len(h.resp.inbound()), h.bodies(); n != 0 || len(sent) != 0 {
				t.Errorf("responder called %d times, sent %q", n, sent)
			}
			if !strings.Contains(h.logs.String(), "level=DEBUG msg=\"whatsapp: message of a kind that needs no answer ignored\"") {
				t.Errorf("no debug line for it:\n%s", h.logs)
			}
		})
	}
	h := newHarness(t)
	h.postFile("unsupported_type.json")
	h.shutdown()
	if sent := h.bodies(); len(sent) != 1 || sent[0] != apology.Unsupported {
		t.Errorf("an unknown kind: sent %q, want %q", sent, apology.Unsupported)
	}
}

// A voice note or document that cannot be fetched is answered with what
// failed, in the person's words; one over the download limit says so.
func TestMediaNotFetched(t *testing.T) {
	h := newHarness(t)
	h.postFile("audio_voice.json") // no such media at the fake Graph API
	h.shutdown()
	if sent := h.bodies(); len(sent) != 1 || sent[0] != "Sorry, I couldn't open that voice note. Could you send it again?" || len(h.resp.inbound()) != 0 {
		t.Errorf("sent %q", sent)
	}

	h = newHarness(t, func(c *setup) { c.MaxMediaBytes = 10 })
	h.graph.AddMedia("1003383421387260", []byte("%PDF-1.4 more than ten bytes"), "application/pdf")
	h.postFile("document.json")
	h.shutdown()
	if sent := h.bodies(); len(sent) != 1 || sent[0] != apology.DocumentLarge {
		t.Errorf("sent %q, want %q", sent, apology.DocumentLarge)
	}
}

// Send returns the id the Graph API gave each part of a reply, with the
// part's text, so that a later reply to it can be understood.
func TestSentIDsRecorded(t *testing.T) {
	long := strings.Repeat("word ", whatsapp.MaxTextLength/5+10)
	h := newHarness(t)
	h.resp.respond = func(_, _ context.Context, _ whatsapp.Inbound) (string, error) { return long, nil }
	h.postFile("text.json")
	h.shutdown()
	graphSent := h.graph.Sent()
	got := h.resp.sentTo("+16505551234")
	if len(graphSent) != 2 || len(got) != 2 {
		t.Fatalf("%d parts sent, %d recorded; want 2 and 2", len(graphSent), len(got))
	}
	for i := range got {
		if got[i].ID != graphSent[i].ID || got[i].Text != graphSent[i].Body || got[i].Time.IsZero() {
			t.Errorf("part %d recorded as %+v, sent as %s %.20q", i, got[i], graphSent[i].ID, graphSent[i].Body)
		}
	}
}

// A message dated a year ahead (a phone's clock) reaches the Responder
// dated when it was received; a few seconds of skew are kept.
func TestFutureTimestampReplaced(t *testing.T) {
	h := newHarness(t)
	h.post(payload([]string{change(sheenaWaID,
		textMessage(sheenaWaID, "wamid.future", "hello from the future", sampleTime.AddDate(1, 0, 0)),
		textMessage(sheenaWaID, "wamid.skew", "a little ahead", sampleTime.Add(20*time.Second)))}))
	h.shutdown()
	got := h.resp.inbound()
	if len(got) != 2 {
		t.Fatalf("responder called %d times", len(got))
	}
	if !got[0].Time.Equal(sampleTime) {
		t.Errorf("a year ahead: time %s, want the receipt %s", got[0].Time, sampleTime)
	}
	if !got[1].Time.Equal(sampleTime.Add(20 * time.Second)) {
		t.Errorf("20 s ahead: time %s, want it kept", got[1].Time)
	}
}
