package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Turn is one logical exchange: the person's message through the final reply,
// every tool round included.
type Turn struct {
	Messages []Message
	// Extra holds the turn object's keys other than "messages", such as the
	// "usage" the assistant records, as raw JSON. They are stored and read
	// back unchanged.
	Extra map[string]json.RawMessage

	// checked is set on a turn this package made or read itself: one
	// that [Memory.Save] prepared, or that a conversation's decoding
	// read and validated. Its messages' content is compact, and checked
	// holds its tool_use ids, so that a save neither compacts nor parses
	// the turns it keeps. Nil means unknown: a turn from outside.
	checked *checkedTurn
}

// checkedTurn is what is known of a checked turn. It is never changed once
// made, so copies of a turn share it.
type checkedTurn struct {
	toolUseIDs []string
}

// MarshalJSON writes {"messages":[...]} followed by the extra keys in sorted
// order, so a turn always encodes to the same bytes. Each message is written
// with its own extra keys too, after role and content, in sorted order.
func (t Turn) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := t.encode(&b, false); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encode writes what MarshalJSON returns to b. With compacted set, the
// messages' content is written as it is, known to be compact already.
func (t Turn) encode(b *bytes.Buffer, compacted bool) error {
	b.WriteString(`{"messages":[`)
	for i, m := range t.Messages {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := m.encode(b, true, compacted); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	if err := encodeExtra(b, t.Extra, "messages"); err != nil {
		return fmt.Errorf("conversation: turn %w", err)
	}
	b.WriteByte('}')
	return nil
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
	c := Turn{Messages: make([]Message, len(t.Messages)), Extra: cloneExtra(t.Extra), checked: t.checked}
	for i, m := range t.Messages {
		c.Messages[i] = m.Clone()
	}
	return c
}

// ToolUseIDs returns the ids of the turn's client tool_use blocks, in order.
func (t Turn) ToolUseIDs() []string {
	var ids []string
	for _, m := range t.Messages {
		if m.Role != RoleAssistant {
			continue
		}
		blocks, _ := m.Blocks()
		for _, b := range blocks {
			if b.Type == "tool_use" {
				ids = append(ids, b.ID)
			}
		}
	}
	return ids
}

// toolUseIDs is ToolUseIDs, without parsing a checked turn again.
func (t Turn) toolUseIDs() []string {
	if t.checked != nil {
		return t.checked.toolUseIDs
	}
	return t.ToolUseIDs()
}

// Conversation is what is stored for one phone.
type Conversation struct {
	Phone string
	// LastActive is the time of the last saved turn; zero when the stored
	// value could not be read, which counts as expired.
	LastActive time.Time
	Turns      []Turn
	// Extra holds the conversation object's keys other than last_active
	// and turns, kept as they are.
	Extra map[string]json.RawMessage
	// Version is the store's version of the record it was read from; 0
	// for a conversation not read from a store.
	Version int64

	// rawTime is the stored last_active that could not be read, written
	// back as it was (nil: it was missing).
	rawTime json.RawMessage
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
	// Expired is set by [Memory.List] by the policy in force.
	Expired bool
}

// Limits are the memory policy's bounds on a conversation.
type Limits struct {
	// Timeout is the inactivity after which a conversation is over.
	Timeout time.Duration
	// MaxTurns is the number of most recent turns kept.
	MaxTurns int
}

// expired reports whether a conversation last active at lastActive is over at
// now: more than timeout has passed (the original's "> CONVERSATION_TIMEOUT").
// A zero lastActive (unreadable) is always over.
func expired(lastActive, now time.Time, timeout time.Duration) bool {
	return lastActive.IsZero() || now.Sub(lastActive) > timeout
}

// clone returns a deep copy of c. The copies of its messages, and of
// their content, are each one allocation, which makes most of the time a
// History call takes when the conversation is cached.
func (c Conversation) clone() Conversation {
	out := c.shallowClone()
	nMsgs, nBytes := 0, 0
	for _, t := range c.Turns {
		nMsgs += len(t.Messages)
		for _, m := range t.Messages {
			nBytes += len(m.Content)
		}
	}
	msgs := make([]Message, 0, nMsgs)
	content := make([]byte, 0, nBytes)
	for i, t := range c.Turns {
		first := len(msgs)
		for _, m := range t.Messages {
			start := len(content)
			content = append(content, m.Content...)
			msgs = append(msgs, Message{Role: m.Role, Content: content[start:len(content):len(content)], Extra: cloneExtra(m.Extra)})
		}
		out.Turns[i] = Turn{Messages: msgs[first:len(msgs):len(msgs)], Extra: cloneExtra(t.Extra), checked: t.checked}
	}
	return out
}

// shallowClone returns a copy of c that shares its turns with c, but not
// the list of them or c's own extra keys.
func (c Conversation) shallowClone() Conversation {
	out := c
	out.Turns = slices.Clone(c.Turns)
	out.Extra = cloneExtra(c.Extra)
	out.rawTime = bytes.Clone(c.rawTime)
	return out
}
