package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/metrics"
	"github.com/mombot/mombot/phone"
	"github.com/mombot/mombot/whatsapp"
)

// responder answers WhatsApp messages with the assistant, and remembers
// the replies sent, by the ids WhatsApp gave them, so that a later reply
// quoting one brings its text.
type responder struct {
	a   *assistant.Assistant
	mem *conversation.Memory
	log *slog.Logger
	m   *metrics.Metrics // nil without --metrics-listen
}

var _ whatsapp.SentRecorder = responder{}

// Respond implements whatsapp.Responder. Handle logs its failures and
// always returns a reply fit to send, kind when something went wrong.
func (r responder) Respond(ctx, held context.Context, in whatsapp.Inbound) (string, error) {
	start := time.Now()
	reply, err := r.a.HandleLocked(ctx, held, inbound(in))
	if r.m != nil {
		r.m.Replied(time.Since(start), err)
	}
	return reply.Text, nil
}

// RecordSent implements whatsapp.SentRecorder.
func (r responder) RecordSent(ctx context.Context, to string, s whatsapp.Sent) {
	m := conversation.RecentMessage{ID: s.ID, Role: conversation.RoleAssistant, Text: s.Text, At: s.Time}
	if err := r.mem.Remember(ctx, to, m); err != nil {
		r.log.Warn("mombot: remembering a reply sent, for later replies to it", "phone", phone.Mask(to), "err", err)
	}
}

// inbound is the assistant's view of a WhatsApp message.
func inbound(in whatsapp.Inbound) assistant.Inbound {
	out := assistant.Inbound{
		From: in.From, Text: in.Text, Image: in.Image, ImageType: in.ImageType, Time: in.Time,
		ID: in.ID, ReplyTo: in.ReplyTo, Video: in.Video,
		Forwarded: in.Forwarded, ForwardedMany: in.ForwardedMany,
	}
	if in.Audio != nil {
		// Audio files other than voice notes are passed on too: the
		// transcriber reads the length of what it can and says what
		// works for the rest.
		out.Voice = in.Audio
	}
	if in.Document != nil {
		out.Document = &assistant.Document{Data: in.Document, MediaType: in.DocumentType, Filename: in.Filename}
	}
	if l := in.Location; l != nil {
		out.Location = &assistant.Location{Latitude: l.Latitude, Longitude: l.Longitude, Name: l.Name, Address: l.Address, URL: l.URL}
	}
	for _, c := range in.Contacts {
		out.Contacts = append(out.Contacts, assistant.Contact{Name: c.Name, Phones: c.Phones, Emails: c.Emails, Organization: c.Organization})
	}
	return out
}
