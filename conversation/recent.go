package conversation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of the recent messages every store remembers ([RecentMessages]).
const (
	// RecentWindow is how long a message is remembered by its id: WhatsApp
	// redelivers a webhook for up to 7 days, and a person can quote a
	// message for as long as it is on their phone; a week of "which one
	// did you mean" is what the family needs, not more.
	RecentWindow = 7 * 24 * time.Hour
	// MaxRecentPerPhone bounds the messages remembered for one person; the
	// oldest are forgotten first. A busy week of a family member is a few
	// hundred messages both ways.
	MaxRecentPerPhone = 500
	// MaxRecentText bounds the text remembered of one message, in bytes:
	// a quote needs the gist, not a whole long answer. Longer texts are
	// cut at a character boundary and end with "…".
	MaxRecentText = 1000
	// MaxRecentID bounds a message id (WhatsApp's are about 60 bytes).
	MaxRecentID = 256
)

// ErrInvalidRecent is returned for a recent message that cannot be
// remembered: no id, an id too long or with control characters, a role
// other than user or assistant, or no time.
var ErrInvalidRecent = errors.New("invalid recent message")

// RecentMessage is one message of a person's recent exchange, remembered by
// its id so that a later message quoting it (WhatsApp's swipe-to-reply,
// whose webhook names only the quoted message's id) can be given its text,
// even after the conversation expired or the process restarted.
type RecentMessage struct {
	// ID is the message's id: the WhatsApp message id ("wamid.…") of the
	// person's message, or of the message the assistant sent.
	ID string
	// Role is RoleUser for the person's messages, RoleAssistant for the
	// assistant's.
	Role string
	// Text is what the message said, as the person saw it (or, for a
	// voice note, its transcript); at most MaxRecentText bytes.
	Text string
	// At is when it was sent.
	At time.Time
}

// RecentMessages remembers, per person, the ids and texts of the recent
// messages both ways for [RecentWindow]. Every store in this module keeps
// them, in the same storage as the conversations but apart from them: they
// outlive a conversation's expiry and its turn cap, and only
// [Memory.Clear] (history clear) forgets them before the window ends.
//
// Implementations are safe for concurrent use by many goroutines and, where
// their storage is shared, by many processes.
type RecentMessages interface {
	// RememberMessages records msgs for phone, a message of an id already
	// remembered replacing it, and forgets phone's messages sent more than
	// RecentWindow before now and all but the newest MaxRecentPerPhone.
	// Each message is checked with [CheckRecent] and its text clipped
	// with [ClipRecentText]; on an error (wrapping ErrInvalidPhone or
	// ErrInvalidRecent for bad input) nothing is recorded. Once it returns
	// nil the messages are durable. Messages of the system sender are not
	// recorded.
	RememberMessages(ctx context.Context, phone string, now time.Time, msgs ...RecentMessage) error

	// RecallMessage returns phone's message with id, or an error wrapping
	// ErrNotFound if none is remembered or it was sent more than
	// RecentWindow before now.
	RecallMessage(ctx context.Context, phone, id string, now time.Time) (RecentMessage, error)

	// ForgetMessages forgets every message remembered for phone. It
	// returns nil whether or not there were any.
	ForgetMessages(ctx context.Context, phone string) error
}

// CheckRecent returns an error wrapping ErrInvalidRecent if m cannot be
// remembered.
func CheckRecent(m RecentMessage) error {
	switch {
	case m.ID == "":
		return fmt.Errorf("conversation: %w: no id", ErrInvalidRecent)
	case len(m.ID) > MaxRecentID:
		return fmt.Errorf("conversation: %w: id longer than %d bytes", ErrInvalidRecent, MaxRecentID)
	case !utf8.ValidString(m.ID) || strings.ContainsFunc(m.ID, unicode.IsControl):
		return fmt.Errorf("conversation: %w: id with control characters or not UTF-8", ErrInvalidRecent)
	case m.Role != RoleUser && m.Role != RoleAssistant:
		return fmt.Errorf("conversation: %w: role %q", ErrInvalidRecent, m.Role)
	case m.At.IsZero():
		return fmt.Errorf("conversation: %w: no time", ErrInvalidRecent)
	}
	return nil
}

// ClipRecentText returns s as it is remembered: valid UTF-8, at most
// MaxRecentText bytes, cut at a character boundary and ended with "…" when
// longer.
func ClipRecentText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxRecentText {
		return s
	}
	const ellipsis = "…"
	n := MaxRecentText - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

// CheckRemember checks the arguments of [RecentMessages.RememberMessages]
// as every store must, and returns the messages to record: checked,
// clipped, within the window at now, the newest of each id, ordered oldest
// first. skip is set when nothing is to be recorded (the system sender, or
// no message within the window).
func CheckRemember(phone string, now time.Time, msgs []RecentMessage) (out []RecentMessage, skip bool, err error) {
	if err := CheckPhone(phone); err != nil {
		return nil, false, err
	}
	byID := make(map[string]int, len(msgs))
	for _, m := range msgs {
		if err := CheckRecent(m); err != nil {
			return nil, false, err
		}
		if RecentExpired(m.At, now) {
			continue
		}
		m.Text = ClipRecentText(m.Text)
		if i, ok := byID[m.ID]; ok {
			out[i] = m
			continue
		}
		byID[m.ID] = len(out)
		out = append(out, m)
	}
	SortRecent(out)
	return out, phone == SystemSender || len(out) == 0, nil
}

// RecentExpired reports whether a message sent at at is past the window at
// now.
func RecentExpired(at, now time.Time) bool { return now.Sub(at) > RecentWindow }

// SortRecent orders msgs oldest first, ties by id, the order in which
// stores keep and prune them.
func SortRecent(msgs []RecentMessage) {
	slices.SortStableFunc(msgs, func(a, b RecentMessage) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// PruneRecent returns msgs, sorted oldest first, without those past the
// window at now and without all but the newest MaxRecentPerPhone: what a
// store keeps of one phone after an addition.
func PruneRecent(msgs []RecentMessage, now time.Time) []RecentMessage {
	SortRecent(msgs)
	msgs = slices.DeleteFunc(msgs, func(m RecentMessage) bool { return RecentExpired(m.At, now) })
	if len(msgs) > MaxRecentPerPhone {
		msgs = msgs[len(msgs)-MaxRecentPerPhone:]
	}
	return msgs
}

// Remember records msgs as phone's recent messages, at the memory's clock,
// if the store keeps them ([RecentMessages]); otherwise it does nothing.
func (m *Memory) Remember(ctx context.Context, phone string, msgs ...RecentMessage) error {
	r, ok := m.store.(RecentMessages)
	if !ok || len(msgs) == 0 {
		return nil
	}
	if err := r.RememberMessages(ctx, phone, m.now(), msgs...); err != nil {
		return fmt.Errorf("conversation: remember messages: %w", err)
	}
	return nil
}

// Recall returns phone's recent message with id, or an error wrapping
// ErrNotFound if the store does not remember it (or keeps none).
func (m *Memory) Recall(ctx context.Context, phone, id string) (RecentMessage, error) {
	r, ok := m.store.(RecentMessages)
	if !ok {
		return RecentMessage{}, fmt.Errorf("conversation: recall message: %w", ErrNotFound)
	}
	msg, err := r.RecallMessage(ctx, phone, id, m.now())
	if err != nil {
		return RecentMessage{}, fmt.Errorf("conversation: recall message: %w", err)
	}
	return msg, nil
}

// forget forgets phone's recent messages, if the store keeps any.
func (m *Memory) forget(ctx context.Context, phone string) error {
	if r, ok := m.store.(RecentMessages); ok {
		if err := r.ForgetMessages(ctx, phone); err != nil {
			return fmt.Errorf("conversation: clear: forget recent messages: %w", err)
		}
	}
	return nil
}
