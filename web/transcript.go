package web

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
)

// bubble is one thing said in a thread: a message's text, a tool call, a
// tool's result, or a placeholder for what is not text.
type bubble struct {
	// Side is "in" for what the person sent, "out" for the assistant's
	// words, "tool" for tool calls and their results.
	Side string
	// Kind is "text", "call", "result", "error" (a failed tool) or
	// "note" (an image, thinking, a block of another type).
	Kind string
	Text string
	// When is the time the person's message was sent, as the assistant
	// wrote it in front of it.
	When string
	// Tool is the tool's name, for a call.
	Tool string
}

// turnView is one turn of a conversation: the person's message through
// the final reply.
type turnView struct {
	Bubbles []bubble
	Model   string
}

// transcript returns c's turns as a thread.
func transcript(c conversation.Conversation) []turnView {
	turns := make([]turnView, 0, len(c.Turns))
	for _, t := range c.Turns {
		var tv turnView
		if m, ok := t.Extra["model"]; ok {
			json.Unmarshal(m, &tv.Model)
		}
		for _, m := range t.Messages {
			tv.Bubbles = append(tv.Bubbles, bubbles(m)...)
		}
		turns = append(turns, tv)
	}
	return turns
}

// bubbles returns what message m shows.
func bubbles(m conversation.Message) []bubble {
	side := "out"
	if m.Role == conversation.RoleUser {
		side = "in"
	}
	blocks, err := m.Blocks()
	if err != nil {
		return []bubble{{Side: side, Kind: "note", Text: "(this message could not be read: " + err.Error() + ")"}}
	}
	var out []bubble
	for _, b := range blocks {
		switch b.Type {
		case "text":
			bb := bubble{Side: side, Kind: "text", Text: b.Text}
			if side == "in" {
				if at, _, words, ok := assistant.CutHeader(b.Text); ok {
					bb.When, bb.Text = at, words
				}
			}
			out = append(out, bb)
		case "tool_use":
			out = append(out, bubble{Side: "tool", Kind: "call", Tool: b.Name, Text: indentJSON(b.Input)})
		case "tool_result":
			kind := "result"
			if b.IsError {
				kind = "error"
			}
			out = append(out, bubble{Side: "tool", Kind: kind, Text: resultText(b.Content)})
		case "image":
			out = append(out, bubble{Side: side, Kind: "note", Text: conversation.ImagePlaceholder})
		case "document":
			out = append(out, bubble{Side: side, Kind: "note", Text: "[Document]"})
		case "thinking", "redacted_thinking":
			out = append(out, bubble{Side: "tool", Kind: "note", Text: "(thinking)"})
		default:
			out = append(out, bubble{Side: "tool", Kind: "note", Text: "[" + b.Type + "]"})
		}
	}
	return mergeCaptions(out)
}

// mergeCaptions puts a placeholder ("[Image sent: photo]") and the text
// that follows it in the same message into one bubble, as a photo and its
// caption are one message on WhatsApp.
func mergeCaptions(bs []bubble) []bubble {
	for i := 0; i+1 < len(bs); i++ {
		a, b := bs[i], bs[i+1]
		if a.Side == "in" && b.Side == "in" && b.Kind == "text" && (a.Kind == "note" || a.Text == conversation.ImagePlaceholder || strings.HasPrefix(a.Text, "[Document sent: ")) {
			b.Text = a.Text + "\n" + b.Text
			bs[i+1] = b
			bs = append(bs[:i], bs[i+1:]...)
		}
	}
	return bs
}

// indentJSON returns a tool call's input as indented JSON, or as it is
// when it is not JSON.
func indentJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// resultText is the readable part of a tool's result: the string, or the
// text of its blocks.
func resultText(content json.RawMessage) string {
	if len(content) == 0 {
		return "(empty)"
	}
	m := conversation.Message{Role: conversation.RoleUser, Content: content}
	if t := m.Text(); t != "" {
		return t
	}
	return string(content)
}
