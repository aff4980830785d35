package conversation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
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
