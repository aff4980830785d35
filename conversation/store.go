package conversation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrNotFound is returned by a [Store] and by [Memory.Clear] when a phone has
// no stored conversation.
var ErrNotFound = errors.New("no conversation for this phone")

// Turn is one logical exchange: the person's message through the final reply,
// every tool round included.
type Turn struct {
	Messages []Message
	// Extra holds the turn object's keys other than "messages", such as the
	// "usage" the assistant records, as raw JSON. They are stored and read
	// back unchanged.
	Extra map[string]json.RawMessage

	// saved is the turn's stored form, when Memory.Save made the turn
	// (save.go); Clone and a Turn built anew leave it out.
	saved *savedForm
}

// MarshalJSON writes {"messages":[...]} followed by the extra keys in sorted
// order, so a turn always encodes to the same bytes. This is the stored
// form: each message is written with its own extra keys too, after role and
// content, in sorted order.
//
// The turn that [Memory.Save] hands to [Store.Append] carries the bytes
// Save wrote as it validated it, and MarshalJSON returns them as they are,
// without encoding or checking the turn again; the store must not change
// them, nor the turn's messages.
func (t Turn) MarshalJSON() ([]byte, error) {
	if t.saved.of(t) {
		return t.saved.data, nil
	}
	var b bytes.Buffer
	// One allocation for the usual turn: the contents, and room for
	// each message's role and keys and the turn's.
	size := 16
	for _, m := range t.Messages {
		size += len(m.Content) + len(m.Role) + 24
	}
	b.Grow(size)
	b.WriteString(`{"messages":[`)
	for i, m := range t.Messages {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := m.encode(&b, true); err != nil {
			return nil, err
		}
	}
	b.WriteByte(']')
	if err := encodeExtra(&b, t.Extra, "messages"); err != nil {
		return nil, fmt.Errorf("conversation: turn %w", err)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a turn object; keys other than "messages" go to Extra.
func (t *Turn) UnmarshalJSON(data []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	raw, ok := obj["messages"]
	if !ok {
		return errors.New(`conversation: turn has no "messages"`)
	}
	var msgs []Message
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return err
	}
	delete(obj, "messages")
	t.Messages = msgs
	t.Extra = compactExtra(obj)
	return nil
}

// Clone returns a deep copy of t.
func (t Turn) Clone() Turn {
	c := Turn{Messages: make([]Message, len(t.Messages)), Extra: cloneExtra(t.Extra)}
	for i, m := range t.Messages {
		c.Messages[i] = m.Clone()
	}
	return c
}

// Conversation is what a store holds for one phone.
type Conversation struct {
	Phone      string
	LastActive time.Time
	Turns      []Turn
}

// Messages returns the messages of every turn, oldest first.
func (c Conversation) Messages() []Message {
	n := 0
	for _, t := range c.Turns {
		n += len(t.Messages)
	}
	out := make([]Message, 0, n)
	for _, t := range c.Turns {
		out = append(out, t.Messages...)
	}
	return out
}

// Summary describes a stored conversation without its messages.
type Summary struct {
	Phone      string
	LastActive time.Time
	Turns      int
	// Expired is set by [Memory.List]; stores leave it false.
	Expired bool
}

// Limits are the parts of the memory policy a store applies when it appends.
type Limits struct {
	// Timeout is the inactivity after which a conversation is over.
	Timeout time.Duration
	// MaxTurns is the number of most recent turns kept.
	MaxTurns int
}

// Expired reports whether a conversation last active at lastActive is over at
// now: more than timeout has passed (the original's "> CONVERSATION_TIMEOUT").
func Expired(lastActive, now time.Time, timeout time.Duration) bool {
	return now.Sub(lastActive) > timeout
}

// AppendTurn returns the turns of a conversation after turn is saved at now:
// the existing turns, or none if the conversation had expired, then turn, and
// of those only the last lim.MaxTurns. It is the policy every store applies;
// stores whose storage can do it in place may apply it there instead.
func AppendTurn(existing []Turn, lastActive time.Time, turn Turn, now time.Time, lim Limits) []Turn {
	if len(existing) > 0 && Expired(lastActive, now, lim.Timeout) {
		existing = nil
	}
	turns := append(slices.Clip(existing), turn)
	if lim.MaxTurns > 0 && len(turns) > lim.MaxTurns {
		turns = turns[len(turns)-lim.MaxTurns:]
	}
	return turns
}

// Store persists conversations. Implementations are safe for concurrent use
// by many goroutines and, where their storage is shared, by many processes.
// Stores keep what they are given; the policy and the validation are
// [Memory]'s.
type Store interface {
	// Load returns phone's stored conversation, expired or not, or an error
	// wrapping ErrNotFound. The turns returned share no memory with the
	// store and all pass [ValidateTurn]: data the store did not write
	// itself is passed through [Repair].
	Load(ctx context.Context, phone string) (Conversation, error)

	// Append saves turn at now as [AppendTurn] describes, atomically: a
	// concurrent Append for the same phone is never lost, and once Append
	// returns nil the turn is durable. On error nothing is changed.
	//
	// The turn has passed [ValidateTurn] ([Memory.Save] checks it), so a
	// store may mark it as its own (see [Checksum]) and not validate it
	// again on load. A turn from Memory.Save carries the bytes and tool
	// ids Save worked out as it checked it: the store's calls of
	// [Turn.MarshalJSON] and [Turn.ToolUseIDs] return them without
	// encoding or parsing the turn again. In the same atomic step Append refuses, with an error
	// wrapping [ErrInvalidTurn], a turn that reuses a tool_use id of a
	// turn that stays next to it ([KeptTurns], [CheckToolIDs]); stores keep
	// each turn's ids so that this needs no load of the conversation.
	Append(ctx context.Context, phone string, turn Turn, now time.Time, lim Limits) error

	// Delete removes phone's conversation; it returns an error wrapping
	// ErrNotFound if there is none.
	Delete(ctx context.Context, phone string) error

	// Expire removes phone's conversation if it was last active at or
	// before cutoff, so that a turn saved since the caller looked is kept.
	// It returns nil whether or not there was anything to remove.
	Expire(ctx context.Context, phone string, cutoff time.Time) error

	// List returns a summary of every stored conversation, ordered by phone.
	List(ctx context.Context) ([]Summary, error)

	// Close releases the store's resources. The store is unusable after.
	Close() error
}
