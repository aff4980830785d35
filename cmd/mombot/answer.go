package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/metrics"
	"github.com/mombot/mombot/phone"
	"github.com/mombot/mombot/whatsapp"
)

// handler is what answerer needs of the assistant: *assistant.Assistant.
type handler interface {
	HandleLocked(ctx, held context.Context, in assistant.Inbound) (assistant.Reply, error)
}

// answerer is serve's delivery.Handler, the middle of a message's path
// (docs/architecture.md): the WhatsApp Client reads the message the
// pipeline hands over, the assistant answers it under the sender's lock,
// and the Client sends the reply. The replies sent are remembered, by the
// ids WhatsApp gave them, so that a later reply quoting one brings its
// text. Each message is counted in the metrics once its reply is sent,
// or given up on, by what the person got.
type answerer struct {
	wa  *whatsapp.Client
	a   handler
	mem *conversation.Memory
	log *slog.Logger
	m   *metrics.Metrics // nil without --metrics-listen
	// outcomes holds, by message id, what the reply in hand is, from
	// Answer until it is sent; nil counts nothing.
	outcomes *outcomeBook
}

// outcome is what a reply in hand gives the person.
type outcome struct{ name, reason string }

// outcomeBook remembers, by message id, the outcome of each reply in
// hand until it is sent. A reply this replica made but never sends (its
// sender's lock passed to another replica, which answers the message) is
// forgotten once it is older than delivery.HandledFor, as the pipeline
// forgets it: the book does not grow with such losses. It is safe for
// concurrent use; the zero value is empty.
type outcomeBook struct {
	mu     sync.Mutex
	m      map[string]bookedOutcome
	pruned time.Time
}

type bookedOutcome struct {
	outcome
	at time.Time
}

// put books o for message id, answered at now, and forgets the outcomes
// older than delivery.HandledFor, at most once an hour.
func (b *outcomeBook) put(id string, o outcome, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]bookedOutcome{}
	}
	b.m[id] = bookedOutcome{o, now}
	if now.Sub(b.pruned) < time.Hour {
		return
	}
	b.pruned = now
	for k, v := range b.m {
		if now.Sub(v.at) > delivery.HandledFor {
			delete(b.m, k)
		}
	}
}

// take returns and forgets the outcome booked for message id.
func (b *outcomeBook) take(id string) (outcome, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[id]
	delete(b.m, id)
	return v.outcome, ok
}

// replyOutcome says what a reply the assistant made with err gives the
// person: the answer (saying that the turn is not saved when the save
// alone failed), or an apology instead.
func replyOutcome(err error) outcome {
	switch {
	case err == nil:
		return outcome{metrics.OutcomeAnswered, ""}
	case errors.Is(err, apology.ErrNotSaved) && !errors.Is(err, apology.ErrPartial) && !errors.Is(err, apology.ErrCutOff):
		// Only the save failed: the answer goes with a note that says so
		// (a cut-off or partial failure's save failing goes with an
		// apology).
		return outcome{metrics.OutcomeAnswered, metrics.ReasonNotSaved}
	}
	return outcome{metrics.OutcomeApologized, ""}
}

var _ delivery.Handler = answerer{}

// Answer implements delivery.Handler. The assistant logs its failures and
// always returns a reply fit to send, kind when something went wrong; so
// does a message the assistant cannot be asked about, and a panic while
// answering, which is logged with its stack, so that a message that always
// panics does not come back for ever.
func (r answerer) Answer(ctx, held context.Context, m delivery.Message) (parts []string, err error) {
	o := outcome{metrics.OutcomeApologized, ""}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("mombot: panic while answering a message; the sender gets an apology",
				"id", m.ID, "from", phone.Mask(m.Key), "panic", p, "stack", string(debug.Stack()))
			parts, err = whatsapp.Split(apology.Internal, whatsapp.MaxTextLength), nil
			o = outcome{metrics.OutcomeApologized, ""}
		}
		if err == nil && r.outcomes != nil {
			r.outcomes.put(m.ID, o, time.Now())
		}
	}()
	in, err := r.wa.Inbound(ctx, m)
	switch {
	case errors.Is(err, whatsapp.ErrNoReply):
		return nil, fmt.Errorf("%w: %w", delivery.ErrSkip, err)
	case err != nil:
		return whatsapp.Split(apology.Message(err), whatsapp.MaxTextLength), nil
	}
	start := time.Now()
	reply, err := r.a.HandleLocked(ctx, held, inbound(in))
	if r.m != nil {
		r.m.ReplyTime(time.Since(start))
	}
	o = replyOutcome(err)
	return whatsapp.Split(reply.Text, whatsapp.MaxTextLength), nil
}

// Send implements delivery.Handler.
func (r answerer) Send(ctx context.Context, m delivery.Message, parts []string) (int, error) {
	sent, err := r.wa.Send(ctx, m, parts)
	for _, s := range sent {
		if s.ID == "" {
			continue // logged by Send
		}
		rm := conversation.RecentMessage{ID: s.ID, Role: conversation.RoleAssistant, Text: s.Text, At: s.Time}
		if err := r.mem.Remember(ctx, m.Key, rm); err != nil {
			r.log.Warn("mombot: remembering a reply sent, for later replies to it", "phone", phone.Mask(m.Key), "err", err)
		}
	}
	if whatsapp.Temporary(err) {
		// The rest is sent at a later pass: counted then.
		return len(sent), fmt.Errorf("%w: %w", delivery.ErrTemporary, err)
	}
	r.count(m.ID, err)
	return len(sent), err
}

// count counts message id in the metrics once its reply is sent, or
// given up on (err not nil), by what the person got.
func (r answerer) count(id string, err error) {
	if r.outcomes == nil {
		return
	}
	o, ok := r.outcomes.take(id)
	if !ok || r.m == nil {
		return
	}
	if err != nil {
		o = outcome{metrics.OutcomeNotSent, ""}
	}
	r.m.Message(o.name, o.reason)
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
