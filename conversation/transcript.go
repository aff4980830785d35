package conversation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mombot/mombot/phone"
)

// MarshalMessages returns msgs as one JSON array, exactly the bytes of
// the "messages" array a request carries (see [Message.MarshalJSON]): the
// stored bytes, without HTML escaping or indentation.
func MarshalMessages(msgs []Message) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		mb, err := m.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b.Write(mb)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// WriteTranscript writes msgs for a person to read, one line per block:
// who said what, each tool call with its input, each result (or error),
// image and thinking placeholders, and the type of any other block.
func WriteTranscript(w io.Writer, msgs []Message) {
	for _, m := range msgs {
		blocks, err := m.Blocks()
		if err != nil {
			fmt.Fprintf(w, "%s: (unreadable content: %v)\n", m.Role, err)
			continue
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				fmt.Fprintf(w, "%s: %s\n", m.Role, indentLines(b.Text))
			case "tool_use":
				fmt.Fprintf(w, "  -> tool %s %s\n", b.Name, b.Input)
			case "tool_result":
				label := "result"
				if b.IsError {
					label = "error"
				}
				fmt.Fprintf(w, "  <- %s: %s\n", label, indentLines(resultText(b.Content)))
			case "image":
				fmt.Fprintf(w, "%s: [image]\n", m.Role)
			case "thinking", "redacted_thinking":
				fmt.Fprintf(w, "  (%s)\n", b.Type)
			default:
				fmt.Fprintf(w, "  [%s block]\n", b.Type)
			}
		}
	}
}

// resultText is the readable part of a tool_result's content: the string,
// or the text of its blocks.
func resultText(content json.RawMessage) string {
	if len(content) == 0 {
		return "(empty)"
	}
	m := Message{Role: RoleUser, Content: content}
	if t := m.Text(); t != "" {
		return t
	}
	return string(content)
}

func indentLines(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }

// WriteConversation writes c for a person to read: whose it is, how many
// turns it holds, when it was last active (in the machine's local time)
// and whether it has expired (which the memory's policy says), then each
// turn's transcript.
func WriteConversation(w io.Writer, c Conversation, expired bool) {
	WriteConversationIn(w, c, expired, time.Local)
}

// WriteConversationIn is [WriteConversation] with the last activity in
// loc, such as the person's own time zone.
func WriteConversationIn(w io.Writer, c Conversation, expired bool, loc *time.Location) {
	state := "active"
	if expired {
		state = "expired: the next message starts a new conversation"
	}
	turns := "turns"
	if len(c.Turns) == 1 {
		turns = "turn"
	}
	fmt.Fprintf(w, "Conversation with %s: %d %s, last active %s (%s)\n", c.Phone, len(c.Turns), turns, lastActive(c.LastActive, loc), state)
	for i, t := range c.Turns {
		fmt.Fprintf(w, "\n--- turn %d ---\n", i+1)
		WriteTranscript(w, t.Messages)
	}
}

// Show writes phone's stored conversation for a person to read
// (WriteConversation), marked expired if it is by the memory's policy, or
// with asJSON the messages [Memory.Peek] returns as one line of JSON
// (MarshalMessages): exactly what would be sent to Claude now. Looking
// changes nothing: an expired conversation stays in the store. It returns
// ErrNotFound when nothing is stored for phone.
func (m *Memory) Show(ctx context.Context, w io.Writer, phone string, asJSON bool) error {
	c, err := m.Load(ctx, phone)
	if err != nil {
		return err
	}
	if !asJSON {
		WriteConversation(w, c, m.Expired(c.LastActive))
		return nil
	}
	msgs, err := m.Peek(ctx, phone)
	if err != nil {
		return err
	}
	data, err := MarshalMessages(msgs)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// WriteSummaries writes sums as a table, one conversation a row: the phone
// number, masked unless full is set, the last activity, the turns and
// whether it is active or expired.
func WriteSummaries(w io.Writer, sums []Summary, full bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PHONE\tLAST ACTIVE\tTURNS\tSTATE")
	for _, s := range sums {
		number := s.Phone
		if !full {
			number = phone.Mask(number)
		}
		state := "active"
		if s.Expired {
			state = "expired"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", number, lastActive(s.LastActive, time.Local), s.Turns, state)
	}
	return tw.Flush()
}

// lastActive writes a last activity in loc with the zone, so that a
// server in UTC and a laptop elsewhere are not misread; a store that
// could not read one reports the zero time.
func lastActive(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}
