package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Roles of a Messages API message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one Messages API message. Content is the message's "content"
// value exactly as JSON: a string or an array of content blocks. Blocks are
// never decoded into typed structs and re-encoded, so fields and block types
// this package does not know are kept unchanged.
//
// A message object has no other fields in the Messages API (the API rejects
// them), so decoding a Message keeps "role" and "content" only.
type Message struct {
	Role    string
	Content json.RawMessage
}

// UserText returns a user message whose content is the plain string text.
func UserText(text string) Message {
	return Message{Role: RoleUser, Content: quote(text)}
}

// NewMessage returns a message of role whose content is the given blocks,
// each a JSON object such as one made by [TextBlock].
func NewMessage(role string, blocks ...json.RawMessage) Message {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, blk := range blocks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(compact(blk))
	}
	b.WriteByte(']')
	return Message{Role: role, Content: b.Bytes()}
}

// TextBlock returns a {"type":"text"} content block.
func TextBlock(text string) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"text","text":`)
	b.Write(quote(text))
	b.WriteByte('}')
	return b.Bytes()
}

// MarshalJSON writes {"role":...,"content":...} with the content bytes as they
// are, so a message is always encoded to the same bytes. Note that
// json.Marshal escapes <, > and & in what MarshalJSON returns; to send the
// stored bytes unchanged, call MarshalJSON or use an Encoder with
// SetEscapeHTML(false).
func (m Message) MarshalJSON() ([]byte, error) {
	if !json.Valid(m.Content) {
		return nil, fmt.Errorf("conversation: message content is not valid JSON")
	}
	var b bytes.Buffer
	b.Grow(len(m.Content) + len(m.Role) + 24)
	b.WriteString(`{"role":`)
	b.Write(quote(m.Role))
	b.WriteString(`,"content":`)
	b.Write(compact(m.Content))
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a message object, keeping its content compacted but
// otherwise byte for byte.
func (m *Message) UnmarshalJSON(data []byte) error {
	var raw struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw.Role == nil {
		return errors.New(`conversation: message has no "role"`)
	}
	if raw.Content == nil {
		return errors.New(`conversation: message has no "content"`)
	}
	m.Role = *raw.Role
	m.Content = compact(raw.Content)
	return nil
}

// Clone returns a copy of m that shares no memory with it.
func (m Message) Clone() Message {
	return Message{Role: m.Role, Content: bytes.Clone(m.Content)}
}

// Equal reports whether m and o are the same role and the same content bytes.
func (m Message) Equal(o Message) bool {
	return m.Role == o.Role && bytes.Equal(m.Content, o.Content)
}

// Block is the part of a content block that the memory rules look at. Raw is
// the whole block, unchanged.
type Block struct {
	Type      string
	ID        string // tool_use: the call's id
	Name      string // tool_use: the tool's name
	ToolUseID string // tool_result: the id of the call it answers
	Text      string // text: the text
	HasText   bool   // text: whether a "text" string was present
	Input     json.RawMessage
	Content   json.RawMessage // tool_result: its content, a string or blocks
	IsError   bool            // tool_result: is_error
	Source    *Source         // image, document
	Raw       json.RawMessage
}

// Source is the "source" of an image or document block.
type Source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	URL       string `json:"url"`
}

type blockFields struct {
	Type      *string         `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	Text      *string         `json:"text"`
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *Source         `json:"source"`
}

// ParseBlock decodes the fields of one content block that the memory rules
// need. It fails when raw is not a JSON object with a string "type".
func ParseBlock(raw json.RawMessage) (Block, error) {
	var f blockFields
	if err := json.Unmarshal(raw, &f); err != nil {
		return Block{}, err
	}
	if f.Type == nil {
		return Block{}, errors.New(`content block has no "type"`)
	}
	b := Block{
		Type: *f.Type, ID: f.ID, Name: f.Name, ToolUseID: f.ToolUseID,
		Input: f.Input, Content: f.Content, IsError: f.IsError, Source: f.Source, Raw: raw,
	}
	if f.Text != nil {
		b.Text, b.HasText = *f.Text, true
	}
	return b, nil
}

// IsString reports whether the content is a plain JSON string.
func (m Message) IsString() bool {
	return len(m.Content) > 0 && m.Content[0] == '"'
}

// Blocks returns the content blocks of m. A string content is returned as a
// single text block.
func (m Message) Blocks() ([]Block, error) {
	if m.IsString() {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return nil, err
		}
		return []Block{{Type: "text", Text: s, HasText: true, Raw: TextBlock(s)}}, nil
	}
	raws, err := rawBlocks(m.Content)
	if err != nil {
		return nil, err
	}
	out := make([]Block, len(raws))
	for i, r := range raws {
		if out[i], err = ParseBlock(r); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
	}
	return out, nil
}

// Text returns the text of m's text blocks, joined by newlines.
func (m Message) Text() string {
	blocks, err := m.Blocks()
	if err != nil {
		return ""
	}
	var b bytes.Buffer
	for _, blk := range blocks {
		if blk.Type == "text" && blk.Text != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(blk.Text)
		}
	}
	return b.String()
}

func rawBlocks(content json.RawMessage) ([]json.RawMessage, error) {
	if len(content) == 0 || content[0] != '[' {
		return nil, errors.New("content is neither a string nor an array of blocks")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(content, &raws); err != nil {
		return nil, err
	}
	return raws, nil
}

// quote returns s as a JSON string, without HTML escaping, so that stored
// text reads as it was written.
func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

// compact returns raw without insignificant white space. Strings and their
// escapes are left exactly as they are. Invalid JSON is returned unchanged;
// validation reports it.
func compact(raw []byte) []byte {
	if len(raw) > 0 && !needsCompact(raw) {
		return bytes.Clone(raw)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return bytes.Clone(raw)
	}
	return b.Bytes()
}

// needsCompact reports whether raw has white space outside strings.
func needsCompact(raw []byte) bool {
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			return true
		}
	}
	return false
}
