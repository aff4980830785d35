package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/phone"
)

// handler answers and sends the messages the delivery Pipeline takes from
// the inbox: it is the WhatsApp side of a message's life, after its
// acknowledgement.
type handler struct{ s *Server }

var _ delivery.Handler = handler{}

// event reads the WhatsApp message a delivery.Message carries.
func (h handler) event(m delivery.Message) (event, error) {
	var ev event
	if err := json.Unmarshal(m.Body, &ev); err != nil {
		return event{}, err
	}
	if ev.From != m.Key || ev.ID != m.ID {
		return event{}, errors.New("the message's sender or id is not the inbox's")
	}
	return ev, nil
}

// Answer implements delivery.Handler: the reply to the message, split
// into parts WhatsApp accepts. A message too old to answer (the one check
// of age: it may have waited in the inbox through downtime; one without a
// time is as old as its receipt) or unreadable needs no reply. A panic
// while answering is logged with its stack and the sender gets an apology,
// so that a message that always panics does not come back forever.
func (h handler) Answer(ctx, held context.Context, m delivery.Message) (parts []string, err error) {
	s := h.s
	log := s.log.With("id", m.ID, "from", phone.Mask(m.Key))
	ev, err := h.event(m)
	if err != nil {
		log.Error("whatsapp: unreadable message in the inbox dropped", "err", err)
		s.cfg.Observer.MessageSkipped(SkipUnreadable)
		return nil, fmt.Errorf("%w: %w", delivery.ErrSkip, err)
	}
	log = log.With("type", ev.Type)
	if now, sent := s.cfg.Now(), ev.sentAt(); !sent.IsZero() && now.Sub(sent) > s.cfg.MaxAge {
		log.Info("whatsapp: message too old to answer skipped", "sent", sent, "max_age", s.cfg.MaxAge)
		s.cfg.Observer.MessageSkipped(SkipTooOld)
		return nil, delivery.ErrSkip
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error("whatsapp: panic while answering a message; the sender gets an apology",
				"panic", p, "stack", string(debug.Stack()))
			parts, err = Split(failedReply, MaxTextLength), nil
		}
	}()
	var reply string
	switch ev.Kind {
	case kindUnsupported:
		log.Info("whatsapp: unsupported message type")
		reply = unsupportedReply
	default:
		reply = s.respond(ctx, held, log, ev)
	}
	return Split(reply, MaxTextLength), nil
}

// Send implements delivery.Handler: the parts go to the sender's WhatsApp
// id (the digits of the number normalised when the message came, which
// the family check used too), and once the last is sent the message is
// logged as answered (a part that fails is logged by send instead). A failure that may pass (a
// temporary Graph API error, or no answer at all past the client's
// retries) wraps delivery.ErrTemporary.
func (h handler) Send(ctx context.Context, m delivery.Message, parts []string) (int, error) {
	ev, err := h.event(m)
	if err != nil {
		return 0, err
	}
	log := h.s.log.With("id", m.ID, "from", phone.Mask(m.Key))
	n, err := h.s.send(ctx, log, phone.Digits(ev.From), parts)
	switch {
	case err == nil:
		chars := 0
		for _, p := range parts {
			chars += len([]rune(p))
		}
		attrs := []any{"type", ev.Type, "parts", len(parts), "reply_chars", chars}
		if !ev.Received.IsZero() {
			attrs = append(attrs, "took", h.s.cfg.Now().Sub(ev.Received)) // from its receipt to its reply
		}
		log.Info("whatsapp: message answered", attrs...)
	case temporary(err):
		return n, fmt.Errorf("%w: %w", delivery.ErrTemporary, err)
	}
	return n, err
}

// temporary reports whether a send that failed after the client's retries
// may succeed later: a temporary Graph API error, or no answer at all.
func temporary(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Temporary()
	}
	var tErr *transportError
	return errors.As(err, &tErr)
}

// send sends the parts of a reply, each at most MaxTextLength characters,
// to the WhatsApp id to, stopping at the first part that fails. It returns
// how many parts were sent, and the error that stopped it, which it logs.
func (s *Server) send(ctx context.Context, log *slog.Logger, to string, parts []string) (int, error) {
	for i, part := range parts {
		id, err := s.graph.sendTextID(ctx, to, part)
		if err == nil {
			s.recordSent(ctx, log, to, id, part) // kinds.go
		}
		if err != nil {
			attrs := []any{"err", err, "part", i + 1, "parts", len(parts)}
			var apiErr *APIError
			if errors.As(err, &apiErr) {
				attrs = append(attrs, "status", apiErr.StatusCode, "code", apiErr.Code, "fbtrace_id", apiErr.FBTraceID)
			}
			log.Error("whatsapp: reply not sent", attrs...)
			s.cfg.Observer.ReplyNotSent(!temporary(err))
			return i, err
		}
	}
	return len(parts), nil
}
