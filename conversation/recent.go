package conversation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	phonepkg "github.com/mombot/mombot/phone"
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

// checkRecent returns an error wrapping ErrInvalidRecent if m cannot be
// remembered.
func checkRecent(m RecentMessage) error {
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

// clipRecentText returns s as it is remembered: valid UTF-8, at most
// MaxRecentText bytes, cut at a character boundary and ended with "…" when
// longer.
func clipRecentText(s string) string {
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

// checkRemember checks the arguments of [Memory.Remember] and returns the messages to record: checked,
// clipped, within the window at now, the newest of each id, ordered oldest
// first. skip is set when nothing is to be recorded (the system sender, or
// no message within the window).
func checkRemember(phone string, now time.Time, msgs []RecentMessage) (out []RecentMessage, skip bool, err error) {
	if err := CheckPhone(phone); err != nil {
		return nil, false, err
	}
	byID := make(map[string]int, len(msgs))
	for _, m := range msgs {
		if err := checkRecent(m); err != nil {
			return nil, false, err
		}
		if recentExpired(m.At, now) {
			continue
		}
		m.Text = clipRecentText(m.Text)
		if i, ok := byID[m.ID]; ok {
			out[i] = m
			continue
		}
		byID[m.ID] = len(out)
		out = append(out, m)
	}
	sortRecent(out)
	return out, phone == SystemSender || len(out) == 0, nil
}

// recentExpired reports whether a message sent at at is past the window at
// now.
func recentExpired(at, now time.Time) bool { return now.Sub(at) > RecentWindow }

// sortRecent orders msgs oldest first, ties by id, the order in which
// they are kept and pruned.
func sortRecent(msgs []RecentMessage) {
	slices.SortStableFunc(msgs, func(a, b RecentMessage) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// pruneRecent returns msgs, sorted oldest first, without those past the
// window at now and without all but the newest MaxRecentPerPhone: what is
// kept of one phone after an addition.
func pruneRecent(msgs []RecentMessage, now time.Time) []RecentMessage {
	sortRecent(msgs)
	msgs = slices.DeleteFunc(msgs, func(m RecentMessage) bool { return recentExpired(m.At, now) })
	if len(msgs) > MaxRecentPerPhone {
		msgs = msgs[len(msgs)-MaxRecentPerPhone:]
	}
	return msgs
}

// Remember remembers msgs as phone's recent messages, each by its id, for
// [RecentWindow], so that a reply quoting one of them can be given its text
// later ([Memory.Recall]). A message with an id already remembered replaces
// it; texts are clipped to [MaxRecentText]; at most [MaxRecentPerPhone] are
// kept, the oldest going first. Messages of the system sender and messages
// already past the window are not remembered. An invalid message is an error
// wrapping [ErrInvalidRecent], and nothing is remembered.
func (m *Memory) Remember(ctx context.Context, phone string, msgs ...RecentMessage) error {
	now := m.now()
	msgs, skip, err := checkRemember(phone, now, msgs)
	if err != nil || skip {
		return err
	}
	err = m.updateRecent(ctx, phone, func(old []RecentMessage) []RecentMessage {
		byID := make(map[string]bool, len(msgs))
		for _, r := range msgs {
			byID[r.ID] = true
		}
		old = slices.DeleteFunc(old, func(r RecentMessage) bool { return byID[r.ID] })
		return pruneRecent(append(old, msgs...), now)
	})
	if err != nil {
		return fmt.Errorf("conversation: remember messages: %w", err)
	}
	return nil
}

// Recall returns phone's recent message with id, or an error wrapping
// ErrNotFound if it is not remembered (or is past [RecentWindow]).
func (m *Memory) Recall(ctx context.Context, phone, id string) (RecentMessage, error) {
	msgs, err := m.recent(ctx, phone)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return RecentMessage{}, fmt.Errorf("conversation: recall message: %w", err)
	}
	now := m.now()
	for _, r := range msgs {
		if r.ID == id && !recentExpired(r.At, now) {
			return r, nil
		}
	}
	return RecentMessage{}, fmt.Errorf("conversation: recall message: %w", ErrNotFound)
}

// forget forgets phone's recent messages.
func (m *Memory) forget(ctx context.Context, phone string) error {
	err := m.store.Delete(ctx, Recent, phone, 0)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("conversation: clear: forget recent messages: %w", err)
	}
	return nil
}

// recentJSON is a recent message as stored: a JSON array of these.
type recentJSON struct {
	ID   string    `json:"id"`
	Role string    `json:"role"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// recent returns phone's stored recent messages.
func (m *Memory) recent(ctx context.Context, phone string) ([]RecentMessage, error) {
	rec, err := m.store.Get(ctx, Recent, phone)
	if err != nil {
		return nil, err
	}
	return m.decodeRecent(phone, rec.Data), nil
}

// decodeRecent reads phone's stored recent messages, leaving out those
// that are not valid; unreadable data is none, so that it is replaced
// rather than refusing every new message.
func (m *Memory) decodeRecent(phone string, data []byte) []RecentMessage {
	var stored []recentJSON
	if err := json.Unmarshal(data, &stored); err != nil {
		m.log.Warn("conversation: recent messages do not parse; they are replaced", "phone", phonepkg.Mask(phone), "err", err)
		return nil
	}
	out := make([]RecentMessage, 0, len(stored))
	for _, s := range stored {
		if r := RecentMessage(s); checkRecent(r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// updateRecent writes change's result as phone's recent messages, on the
// condition that nobody wrote them since they were read, reading again when
// somebody did. An empty result deletes the record.
func (m *Memory) updateRecent(ctx context.Context, phone string, change func([]RecentMessage) []RecentMessage) error {
	return m.updateRecord(ctx, Recent, phone, RecentWindow, func(data []byte) ([]byte, error) {
		var old []RecentMessage
		if data != nil {
			old = m.decodeRecent(phone, data)
		}
		msgs := change(old)
		if len(msgs) == 0 {
			return nil, nil
		}
		stored := make([]recentJSON, len(msgs))
		for i, r := range msgs {
			stored[i] = recentJSON(r)
			stored[i].At = r.At.UTC()
		}
		return json.Marshal(stored)
	})
}

// sweepRecent drops every recent message past [RecentWindow] at now.
func (m *Memory) sweepRecent(ctx context.Context, now time.Time) error {
	recs, err := m.store.List(ctx, Recent, "")
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if rec.Key == SystemSender || CheckPhone(rec.Key) != nil {
			continue
		}
		err := m.updateRecent(ctx, rec.Key, func(old []RecentMessage) []RecentMessage { return pruneRecent(old, now) })
		if err != nil {
			return err
		}
	}
	return nil
}
